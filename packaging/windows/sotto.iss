; Inno Setup 6 script for Sotto's Windows installer (compiled by packaging/build.ps1):
;   ISCC /DAppVersion=0.1.0 /DBundleDir=...\sotto /DOutputDir=...\dist packaging\windows\sotto.iss
; A per-user install without administrator rights (PrivilegesRequired=lowest: {autopf} is then
; %LOCALAPPDATA%\Programs), a Start-menu shortcut to the windowed sottow.exe, an optional desktop
; shortcut, and an uninstaller (Settings > Apps, or the Start-menu entry). The user's settings,
; history and downloaded models (in %LOCALAPPDATA%\sotto) are kept on uninstall.

#ifndef AppVersion
  #error Pass the version: ISCC /DAppVersion=X.Y.Z
#endif
#ifndef BundleDir
  #error Pass the PyInstaller onedir bundle: ISCC /DBundleDir=PATH
#endif
#ifndef OutputDir
  #define OutputDir "."
#endif

[Setup]
AppId={{7C1B4F0E-5D8A-4E43-9E0B-3B0F5D2C9A61}
AppName=Sotto
AppVersion={#AppVersion}
AppVerName=Sotto {#AppVersion}
AppPublisher=Sotto
AppComments=Live captions and translation of speech, on your own machine
DefaultDirName={autopf}\Sotto
DefaultGroupName=Sotto
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
MinVersion=10.0
OutputDir={#OutputDir}
OutputBaseFilename=sotto-{#AppVersion}-windows-x64-setup
; the models (half the bundle) hardly compress: fast LZMA2 and no solid block keep the build quick
Compression=lzma2/fast
SolidCompression=no
WizardStyle=modern
UninstallDisplayIcon={app}\sottow.exe
UninstallDisplayName=Sotto
CloseApplications=yes

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\Sotto"; Filename: "{app}\sottow.exe"; WorkingDir: "{app}"; Comment: "Live captions and translation"
Name: "{group}\Uninstall Sotto"; Filename: "{uninstallexe}"
Name: "{userdesktop}\Sotto"; Filename: "{app}\sottow.exe"; WorkingDir: "{app}"; Tasks: desktopicon

[Run]
Filename: "{app}\sottow.exe"; Description: "{cm:LaunchProgram,Sotto}"; Flags: nowait postinstall skipifsilent
