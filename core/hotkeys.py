"""Key combinations that well-known programs and desktops use, so that Sotto's global hotkeys take none
of them.

A global hotkey reaches Sotto before the program with the focus sees the keys: bound to Ctrl+Shift+T it
would take "reopen a closed tab" from every web browser. :func:`refusal` names, in one sentence, what a
combination does elsewhere; the settings refuse such a binding when it is chosen (core.settings).

Combinations are written in Qt's portable key-sequence text, as the settings store them. On macOS Qt's
Ctrl is the Command key (⌘) and its Meta the Control key (⌃), so one entry covers a program's Ctrl+S on
Windows and Linux and its ⌘S on macOS; the macOS system shortcuts are written the same way (⌘Space,
Spotlight, is "Ctrl+Space"). Sotto's defaults (Ctrl+Alt+Shift with Space, P, O or X: core.settings) are
in none of the lists; Ctrl+Alt+Shift+S and +T are (Photoshop, Word, JetBrains IDEs, macOS's Save As).
"""

from __future__ import annotations

# Qt's modifier names, in the order Qt writes them ("Meta+Ctrl+Alt+Shift+S")
MODIFIER_NAMES = {"meta": "Meta", "ctrl": "Ctrl", "alt": "Alt", "shift": "Shift"}

# combination -> what it does there, as the rest of a sentence that starts with the combination
WELL_KNOWN: dict[str, str] = {
    # Nearly every program on every system (Ctrl is ⌘ on macOS): editing, files, windows
    "Ctrl+A": "selects everything in nearly every program",
    "Ctrl+C": "copies in nearly every program",
    "Ctrl+V": "pastes in nearly every program",
    "Ctrl+X": "cuts in nearly every program",
    "Ctrl+Z": "undoes in nearly every program",
    "Ctrl+Y": "redoes in most programs on Windows",
    "Ctrl+Shift+Z": "redoes in most programs",
    "Ctrl+F": "finds text in nearly every program",
    "Ctrl+S": "saves in nearly every program",
    "Ctrl+O": "opens a file in nearly every program",
    "Ctrl+N": "opens a new window or document in nearly every program",
    "Ctrl+P": "prints in nearly every program and opens Quick Open in VS Code",
    "Ctrl+Q": "quits the program in most programs on Linux and macOS",
    "Ctrl+W": "closes a tab or window in web browsers and most programs",
    # Web browsers (Chrome, Edge, Firefox, Safari)
    "Ctrl+T": "opens a new tab in web browsers",
    "Ctrl+Shift+T": "reopens a closed tab in web browsers",
    "Ctrl+Shift+W": "closes the window in web browsers",
    "Ctrl+Shift+N": "opens an incognito window in Chrome and a new window in VS Code",
    "Ctrl+Shift+P": "opens a private window in Firefox and the Command Palette in VS Code",
    "Ctrl+Shift+O": "opens the bookmarks in web browsers and goes to a symbol in VS Code",
    "Ctrl+Shift+B": "shows the bookmarks in web browsers and runs the build task in VS Code",
    "Ctrl+Shift+A": "searches the open tabs in Chrome and opens the add-ons in Firefox",
    "Ctrl+Shift+D": "bookmarks all tabs in web browsers and opens Run and Debug in VS Code",
    "Ctrl+Shift+Del": "clears the browsing data in web browsers",
    "Ctrl+Shift+I": "opens the developer tools in web browsers",
    "Ctrl+Shift+J": "opens the console in web browsers",
    "Ctrl+Shift+C": "copies in terminals and inspects an element in web browsers",
    "Ctrl+Shift+R": "reloads the page without its cache in web browsers",
    "Ctrl+Shift+Q": "quits Firefox, closes the window in terminals and logs out on macOS (⇧⌘Q)",
    "Ctrl+Shift+Tab": "goes to the previous tab in web browsers and most tabbed programs",
    "Ctrl+Tab": "goes to the next tab in web browsers and switches apps on macOS (⌘Tab)",
    "Ctrl+PgUp": "goes to the previous tab in web browsers",
    "Ctrl+PgDown": "goes to the next tab in web browsers",
    "Ctrl+L": "selects the address bar in web browsers and aligns text left in word processors",
    "Ctrl+R": "reloads the page in web browsers and aligns text right in word processors",
    "Ctrl+D": "bookmarks the page in web browsers",
    "Ctrl+H": "shows the history in web browsers, opens Replace in editors and hides the app on macOS (⌘H)",
    "Ctrl+J": "shows the downloads in web browsers and justifies text in word processors",
    "Ctrl+G": "finds the next match in web browsers and editors",
    "Ctrl+Shift+G": "finds the previous match in web browsers and opens Source Control in VS Code",
    "Ctrl+E": "searches from the address bar in web browsers and centres text in word processors",
    "Ctrl+U": "shows the page's source in web browsers and underlines text in word processors",
    "Ctrl+=": "zooms in, in web browsers and most programs",
    "Ctrl++": "zooms in, in web browsers and most programs",
    "Ctrl+-": "zooms out, in web browsers and most programs",
    "Ctrl+0": "resets the zoom in web browsers and most programs",
    "Alt+Left": "goes back in web browsers",
    "Alt+Right": "goes forward in web browsers",
    "Alt+Home": "opens the home page in web browsers",
    "F5": "reloads the page in web browsers and starts debugging in VS Code",
    "F6": "selects the address bar in web browsers",
    "F11": "switches to full screen in web browsers and most programs",
    "F12": "opens the developer tools in web browsers and Save As in Word",
    "Ctrl+F5": "reloads the page without its cache in web browsers",
    # VS Code (and editors that follow it)
    "Ctrl+Shift+E": "opens the Explorer in VS Code and tracks changes in Word",
    "Ctrl+Shift+F": "searches all files in VS Code and JetBrains IDEs",
    "Ctrl+Shift+H": "replaces in all files in VS Code",
    "Ctrl+Shift+K": "deletes a line in VS Code and opens the web console in Firefox",
    "Ctrl+Shift+L": "selects every match in VS Code and turns filters on in Excel",
    "Ctrl+Shift+M": "shows the Problems in VS Code and the responsive design mode in Firefox",
    "Ctrl+Shift+U": "types a character by its Unicode number in GTK programs on Linux",
    "Ctrl+Shift+X": "opens the Extensions in VS Code",
    "Ctrl+`": "opens the terminal in VS Code and switches windows on macOS (⌘`)",
    "Ctrl+/": "comments a line out in code editors",
    "Ctrl+B": "makes text bold in word processors and shows the side bar in VS Code",
    "Ctrl+K": "inserts a link in word processors and mail and starts a chord in VS Code",
    "F1": "opens the help in most programs and the Command Palette in VS Code",
    "F2": "renames in file managers and VS Code",
    "F3": "finds the next match in web browsers and most programs",
    # Office and LibreOffice
    "Ctrl+I": "makes text italic in word processors and mail",
    "Ctrl+M": "indents a paragraph in Word and minimises the window on macOS (⌘M)",
    "Ctrl+Shift+S": "saves under another name (Save As) in LibreOffice, VS Code and many other programs",
    "Ctrl+Shift+V": "pastes in terminals and pastes without formatting in web browsers and LibreOffice",
    "F7": "checks the spelling in Word and LibreOffice",
    # JetBrains IDEs (IntelliJ IDEA, PyCharm), Photoshop and Word: their Ctrl+Alt+Shift combinations
    "Ctrl+Alt+Shift+S": "saves for the web in Photoshop, opens the styles in Word, the project structure in "
                        "JetBrains IDEs and Save As on macOS (⌥⇧⌘S)",
    "Ctrl+Alt+Shift+T": "opens Refactor This in JetBrains IDEs and transforms again in Photoshop",
    "Ctrl+Alt+Shift+N": "goes to a symbol in JetBrains IDEs and adds a layer in Photoshop",
    "Ctrl+Alt+Shift+C": "copies a reference in JetBrains IDEs and scales by content in Photoshop",
    "Ctrl+Alt+Shift+E": "merges the visible layers into a new one in Photoshop",
    "Ctrl+Alt+Shift+K": "opens the keyboard shortcuts in Photoshop",
    "Ctrl+Alt+L": "reformats code in JetBrains IDEs and locks the screen on KDE",
    "Ctrl+Alt+S": "opens the settings in JetBrains IDEs",
    # Windows (Meta is the Windows key)
    "Ctrl+Alt+Del": "opens the security screen on Windows and logs out on Linux desktops",
    "Ctrl+Shift+Esc": "opens the Task Manager on Windows",
    "Ctrl+Esc": "opens the Start menu on Windows and the system monitor on KDE",
    "Alt+Tab": "switches windows on every desktop",
    "Alt+Shift+Tab": "switches windows on every desktop",
    "Alt+Esc": "switches windows on Windows",
    "Alt+F4": "closes the window on Windows and Linux desktops",
    "Alt+Space": "opens the window menu on Windows and Linux desktops and KRunner on KDE",
    "Ctrl+F4": "closes a tab or document on Windows and switches to desktop 4 on KDE",
    "Shift+F10": "opens the context menu on Windows and Linux",
    "F10": "opens the menu bar on Windows and Linux",
    "Meta+Shift+S": "takes a screenshot of an area on Windows",
    "Meta+Tab": "shows the open windows on Windows and GNOME",
    "Meta+Space": "switches the keyboard layout on Windows and GNOME and the input source on macOS (⌃Space)",
    "Meta+.": "opens the emoji panel on Windows",
    "Meta+Left": "snaps the window to the left on Windows and GNOME and switches Spaces on macOS (⌃←)",
    "Meta+Right": "snaps the window to the right on Windows and GNOME and switches Spaces on macOS (⌃→)",
    "Meta+Up": "maximises the window on Windows and GNOME and opens Mission Control on macOS (⌃↑)",
    "Meta+Down": "restores the window on Windows and GNOME and shows the app's windows on macOS (⌃↓)",
    "Meta+Ctrl+D": "adds a virtual desktop on Windows",
    "Meta+Ctrl+Left": "switches virtual desktops on Windows",
    "Meta+Ctrl+Right": "switches virtual desktops on Windows",
    "Meta+Alt+R": "records the screen with the Game Bar on Windows",
    # Windows with European keyboards: Ctrl+Alt is AltGr there, which types these characters
    "Ctrl+Alt+E": "types € on most European keyboards on Windows, where Ctrl+Alt is AltGr",
    "Ctrl+Alt+Q": "types @ on German keyboards on Windows, where Ctrl+Alt is AltGr",
    "Ctrl+Alt+7": "types { on German keyboards on Windows, where Ctrl+Alt is AltGr",
    "Ctrl+Alt+8": "types [ on German keyboards on Windows, where Ctrl+Alt is AltGr",
    "Ctrl+Alt+9": "types ] on German keyboards on Windows, where Ctrl+Alt is AltGr",
    "Ctrl+Alt+0": "types } on German keyboards on Windows, where Ctrl+Alt is AltGr",
    # GNOME and KDE
    "Ctrl+Alt+T": "opens a terminal on Ubuntu and other Linux desktops",
    "Ctrl+Alt+Left": "switches workspaces on GNOME",
    "Ctrl+Alt+Right": "switches workspaces on GNOME",
    "Ctrl+Alt+Up": "switches workspaces on GNOME",
    "Ctrl+Alt+Down": "switches workspaces on GNOME",
    "Ctrl+Alt+Shift+R": "records the screen on GNOME",
    "Ctrl+Alt+Shift+Del": "logs out without asking on KDE",
    "Ctrl+Alt+Shift+PgUp": "restarts the computer without asking on KDE",
    "Ctrl+Alt+Shift+PgDown": "shuts the computer down without asking on KDE",
    "Meta+PgUp": "switches workspaces on GNOME",
    "Meta+PgDown": "switches workspaces on GNOME",
    "Alt+F1": "opens the application launcher on KDE",
    "Alt+F2": "runs a command on GNOME and KDE",
    "Alt+F7": "moves the window on GNOME",
    "Alt+F8": "resizes the window on GNOME",
    "Alt+F10": "maximises the window on GNOME",
    "Alt+`": "switches between an app's windows on GNOME",
    "Ctrl+F1": "switches to desktop 1 on KDE",
    "Ctrl+F2": "switches to desktop 2 on KDE",
    "Ctrl+F3": "switches to desktop 3 on KDE",
    # macOS system shortcuts, in Qt's names (Ctrl is ⌘, Alt is ⌥, Meta is ⌃)
    "Ctrl+Space": "opens Spotlight on macOS (⌘Space) and completes code in VS Code and JetBrains IDEs",
    "Ctrl+Alt+Space": "opens a Finder search window on macOS (⌥⌘Space)",
    "Ctrl+,": "opens the settings on macOS (⌘,) and in VS Code",
    "Ctrl+Shift+3": "takes a screenshot on macOS (⇧⌘3)",
    "Ctrl+Shift+4": "takes a screenshot of an area on macOS (⇧⌘4)",
    "Ctrl+Shift+5": "opens the screenshot tools on macOS (⇧⌘5)",
    "Ctrl+Alt+Esc": "opens Force Quit on macOS (⌥⌘Esc) and kills a window on KDE",
    "Ctrl+Alt+Shift+Esc": "forces the front app to quit on macOS (⌥⇧⌘Esc)",
    "Ctrl+Alt+H": "hides the other apps on macOS (⌥⌘H)",
    "Ctrl+Alt+D": "shows or hides the Dock on macOS (⌥⌘D)",
    "Ctrl+Alt+Shift+Q": "logs out at once on macOS (⌥⇧⌘Q)",
    "Ctrl+Alt+Shift+V": "pastes without formatting on macOS (⌥⇧⌘V) and in JetBrains IDEs",
    "Meta+Ctrl+Q": "locks the screen on macOS (⌃⌘Q)",
    "Meta+Ctrl+F": "switches to full screen on macOS (⌃⌘F)",
    "Meta+Ctrl+Space": "opens the emoji picker on macOS (⌃⌘Space)",
}

# Whole families: (modifiers, which keys, what they do). A letter, a digit, or any one printable character.
FAMILIES: tuple[tuple[frozenset[str], str, str], ...] = (
    (frozenset({"shift"}), "character", "types a character in every program"),
    (frozenset({"alt"}), "letter", "opens a menu by its underlined letter in most programs on Windows and Linux"),
    (frozenset({"alt"}), "digit", "goes to a tab by its number in Firefox on Linux and in terminals"),
    (frozenset({"ctrl"}), "digit", "goes to a tab by its number in web browsers"),
    (frozenset({"meta"}), "letter", "is a Windows system shortcut (the Windows key with a letter) and edits "
                                    "text on macOS (⌃ with a letter)"),
    (frozenset({"meta"}), "digit", "opens an app of the taskbar on Windows or of the dash on GNOME"),
)


def combination(text: str) -> tuple[frozenset[str], str] | None:
    """``text``'s modifiers (Qt's names, lower case) and key (upper case), in any order or case; None for ""."""
    text = text.strip()
    if not text:
        return None
    if text.endswith("++"):  # the + key itself
        head, key = text[:-2], "+"
    else:
        head, _, key = text.rpartition("+")
    modifiers = frozenset(m.strip().lower() for m in head.split("+")) if head else frozenset()
    return modifiers, key.strip().upper()


def written(modifiers: frozenset[str], key: str) -> str:
    """A combination of modifiers and one key in Qt's portable text, modifiers in Qt's order ("Ctrl+Alt+Shift+P")."""
    names = [name for m, name in MODIFIER_NAMES.items() if m in modifiers]
    return "+".join([*names, key])


_KNOWN = {combination(text): (text, use) for text, use in WELL_KNOWN.items()}


def _kind(key: str) -> set[str]:
    kinds = {"character"} if len(key) == 1 and key.isprintable() else set()
    if len(key) == 1 and "A" <= key <= "Z":
        kinds.add("letter")
    if len(key) == 1 and key.isdigit():
        kinds.add("digit")
    return kinds


def well_known_use(text: str) -> tuple[str, str] | None:
    """(the combination as Qt writes it, what it does elsewhere) for a combination that a well-known program
    or desktop uses; None for one that none of the lists has (and for "")."""
    parsed = combination(text)
    if parsed is None:
        return None
    if parsed in _KNOWN:
        return _KNOWN[parsed]
    modifiers, key = parsed
    for family, kind, use in FAMILIES:
        if modifiers == family and kind in _kind(key):
            return written(modifiers, key), use
    return None


def refusal(text: str) -> str:
    """One sentence saying why ``text`` cannot be a global hotkey ("" when it can)."""
    known = well_known_use(text)
    if known is None:
        return ""
    shown, use = known
    return f"{shown} {use}; choose another combination."
