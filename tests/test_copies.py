"""A finished sentence left in English is decoded again and comes back translated; what a copy is and
where it begins (core.translate.copies), and that names and numbers stay."""

from __future__ import annotations

import dataclasses

import pytest

from core.translate.casing import as_written, typed_in_lower_case
from core.translate.clauses import halves, sentence_parts
from core.translate.copies import copy_start, word_starts
from core.translate.hesitations import without_hesitations
from core.translate.markers import markers_alone, split_markers, split_tail, with_markers, with_tail
from core.translate.numbers import invented_numbers, invented_start
from core.translate.prompts import borrowed_example
from core.translate.quality import is_copy, is_fragment, keeps_enough, keeps_numbers, looks_english

# Short, informal sentences the bundled model gave back in English as finished sentences before the
# copy retry (each is a copy with ``copy_retries = 0``, asserted below).
COPIED = ("Cheers, y'all.", "Hold on a second.", "Alright, let's get started.", "Hey, how's it going?")
# one-word replies the first decode gives back as they are ("Bye." → "Bye.", "Yeah." → "Yeah.")
REPLIES = ("Yeah.", "Bye.", "Yep.")
# lines made of set phrases (core.translate.phrasebook), as the app says them in German
PHRASES_SAID = {"See you later.": "Bis später.", "Got it.": "Verstanden.", "Sounds good.": "Klingt gut.",
                "Bye bye.": "Tschüss.", "Thanks, everyone!": "Danke, alle zusammen!", "Yes, sir.": "Ja, mein Herr."}
# copied before the retry (names counted), each with a name or a number that its translation keeps
NAMES_AND_NUMBERS = (("Welcome to CSA in Italy.", ("CSA",)),
                     ("Willoughby set up Truly with Capp in 2016 and Jones, 52.", ("Capp", "52", "2016")))


# NTREX-128 (CC-BY-SA 4.0) sentences the copy retry left broken: one in English whole, one cut to a
# fragment; and one that keeps a quotation, which its halves alone would translate
LEFT_IN_ENGLISH = ("Online shopping and a shift towards buying small amounts of food daily at local convenience "
                   "stores means supermarkets are having to do more to persuade people to visit.")
CUT_SHORT = ("The investment in beauty comes as supermarkets hunt for ways to use up shelf space once sued for TVs, "
             "microwaves and homeware.")
QUOTED = 'One Labour AM said his group was concerned "it rhymes with Twp and Pwp."'
# NTREX-128: a sentence of names the copy retry leaves in English; its halves lose one name of eight ("ITV")
MANY_NAMES = ("Willoughby is to become a brand ambassador for M&S and will replace Ant McPartlin as host of ITV's "
              "I'm A Celebrity.")


def test_where_a_copy_begins():
    pieces = [" Okay", ",", " so", " that", "'", "s", " down", ",", " right", "."]
    assert word_starts(pieces) == [0, 2, 3, 6, 8]  # "'s" goes on the word before it
    assert copy_start(pieces, "Okay, so that's down, right.") == 0
    # a name kept at the start is no copy: the copied run begins after it
    assert copy_start([" Tom", " sagte", ":", " hold", " on"], "Tom said: hold on.") == 3
    assert copy_start([" Tom", " ist", " hier", "."], "Tom is here.") is None
    # a number is kept where it is: the copied run begins at the word after it (banned, "2" became "3")
    assert copy_start([" 2", " tickets", " to", " see", " it"], "2 tickets to see it.") == 1
    assert copy_start([" 2", "%", " milk", " for", " you"], "2% milk for you.") == 2


def test_numbers_do_not_make_a_copy():
    # BConTrasT chat (tune): German around the source's digits, and English around them
    assert not is_copy("sure, it is 9 1 6 4 9 8 9 8 9 1.", "Klar, es ist 9 1 6 4 9 8 9 8 9 1.")
    assert not is_copy("Ok their Phone number is (916) 441-7200.", "Telefonnummer (916) 441-7200.",
                       names_aside=False)
    assert is_copy("2% milk for your grande americano.", "2% milk for your grande americano.")
    assert is_copy("3 large pizzas, 2 veggie lovers, 1 chicken alfredo.",
                   "3 large pizzas, 2 veggie lovers, 1 chicken alfredo.", names_aside=False)


def test_halves_cut_where_a_reader_pauses():
    assert halves("Hello there my friend.") is None  # under twice MIN_WORDS words
    assert halves(LEFT_IN_ENGLISH) == ("Online shopping and a shift towards buying small amounts of food daily",
                                       "at local convenience stores means supermarkets are having to do more to "
                                       "persuade people to visit.")
    # a clause mark near the middle comes first
    assert halves("However, supporters of the referendum, including Prime Minister Zoran Zaev, argue that") == (
        "However, supporters of the referendum,", "including Prime Minister Zoran Zaev, argue that")
    # not inside a name
    assert halves("Peter Jones 'furious' after Holly Willoughby pulls out of £11million deal") == (
        "Peter Jones 'furious' after Holly Willoughby", "pulls out of £11million deal")


def test_hesitations_are_left_out_and_backchannels_stay():
    assert without_hesitations("So, um, what do you think?") == "So, what do you think?"
    assert without_hesitations("Um, yeah.") == "Yeah."
    assert without_hesitations("Uh, I think, uh, we should, um, start.") == "I think, we should, start."
    assert without_hesitations("Well... uh... okay.") == "Well... okay."
    for kept in ("Mm-hmm.", "Uh-huh, right.", "Umbrellas, hummus and errands.", "Er ist hier."):
        assert without_hesitations(kept, "en" if kept[:2] != "Er" else "de") == kept
    assert without_hesitations("Hmm.") == "" and without_hesitations("Um, uh...") == ""


def test_english_that_is_not_the_sources_words_is_told():
    assert looks_english("We'll be back.") and looks_english("This is the end.")
    for german in ("Danke, Leute!", "Was ist das?", "Die Katze ist in der Küche.", "Okay, okay.",
                   'Trump sagte in seinem "News anchor" Voice.'):
        assert not looks_english(german), german
    # a quotation kept as it is does not make a sentence English
    assert not looks_english('Er sagte "what is this" dazu.', 'He said "what is this" about it.')
    # a reply: one English word is enough where it is all that is said; German says "Okay" and "Cool" too
    for english in ("Bye.", "Oh, bye.", "Yeah, I think so.", "Thanks!"):
        assert looks_english(english), english
    for german in ("Okay.", "Cool.", "Ja.", "Tschüss.", "Danke, Sir."):
        assert not looks_english(german), german


def test_a_retry_that_drops_a_number_is_told():
    source = "Willoughby set up Truly with Capp in 2016 and Jones, 52."
    assert keeps_numbers(source, source, "Willoughby gründete 2016 Truly mit Capp und Jones, 52.")
    assert not keeps_numbers(source, source, "Willoughby gründete Truly mit Capp und Jones, 52.")
    assert keeps_numbers(source, "Willoughby set up Truly.", "Willoughby gründete Truly.")  # none kept before
    assert keeps_numbers("It won in Italy.", "It won in Italy.", "Es gewann in Italien.")  # names are not held to it


def test_a_number_is_kept_when_its_digits_are():
    source = "It is a small part of press freedom in the 21st century, a £11million deal."
    assert keeps_numbers(source, source, "Es ist ein kleiner Teil der Pressefreiheit im 21. Jahrhundert, 11 Millionen.")
    assert not keeps_numbers(source, source, "Es ist ein kleiner Teil der Pressefreiheit im 21. Jahrhundert.")
    assert keeps_numbers("We leave at 2.30.", "We leave at 2.30.", "Wir fahren um 2:30 Uhr.")
    source = "Chelsea faces Videoton at 3 p.m. on Thursday."  # an afternoon hour, written the German way
    assert keeps_numbers(source, source, "Chelsea trifft am Donnerstag um 15 Uhr auf Videoton.")
    assert keeps_numbers(source, source, "Chelsea trifft am Donnerstag um 3 Uhr nachmittags auf Videoton.")
    assert not keeps_numbers(source, source, "Chelsea trifft am Donnerstag auf Videoton.")
    assert not keeps_numbers("Ten of us, 3 people.", "Ten of us, 3 people.", "Zehn von uns, 15 Leute.")


def test_halves_may_lose_one_name_of_many_but_no_number_or_quotation():
    whole = MANY_NAMES  # a copy keeps every name
    assert keeps_enough(MANY_NAMES, whole, "Willoughby wird Markenbotschafterin für M&S und ersetzt Ant McPartlin "
                                           "als Moderatorin von I'm A Celebrity.")  # "ITV" lost: 1 of 8
    assert not keeps_enough(MANY_NAMES, whole, "Willoughby wird Markenbotschafterin und ersetzt den Moderator "
                                               "von I'm A Celebrity.")  # M&S, Ant, McPartlin, ITV lost
    source = "Peter Jones and Holly Willoughby set up Truly in 2016."
    assert not keeps_enough(source, source, "Peter Jones und Holly Willoughby gründeten Truly.")  # the year lost
    assert not keeps_enough(QUOTED, QUOTED, 'Ein Labour AM sagte, seine Gruppe sei besorgt, "es reimt sich auf Twp '
                                            'und Pwp."')  # the quotation translated
    assert not keeps_enough("Tom met Ana.", "Tom met Ana.", "Tom traf sie.")  # one name of two is too many
    # a name translated keeps its first letters; a made-up one does not
    source = "Chelsea led 1-0 after a score in the 25th minute from Belgian star Eden Hazard."
    assert keeps_enough(source, source, "Die Chelsea-Elf führte 1-0 im 25. Minute von Belgier Eden Hazard.")
    assert not keeps_enough(source, source, "Die Chelsea-Elf führte 1-0 im 25. Minute von Wulff.")


def test_halves_meeting_in_a_repeated_phrase_say_it_once():
    from core.translate.translator import _after_seam

    # NTREX-128: "… while about 30 yards out from the | Chelsea goal …", each half translated alone
    assert _after_seam("Sturridge erhielt einen Pass während 30 Meter von der",
                       "von der Chelsea-Goal mit seinem Team 1:0.") == "Chelsea-Goal mit seinem Team 1:0."
    assert _after_seam("Er sagte, die", "die Katze schläft.") == "die Katze schläft."  # one word twice is kept
    assert _after_seam("Wir gehen nach Hause.", "Nach Hause, sagte sie.") == "Nach Hause, sagte sie."  # not at the end
    assert _after_seam("Ja, so ist es", "so ist es") == "so ist es"  # nothing would be left of the second half


def test_an_example_borrowed_from_the_prompt_is_told():
    assert borrowed_example("„Wir werden nicht aufgeben“, sagte die Opposition.", "However, supporters of the",
                            "en", "de") == 3
    assert borrowed_example('"We will not give up" voice.', 'mock "news anchor" voice.', "en", "de") == 3
    assert borrowed_example("Wo ist der Bahnhof?", "Where is the train station?", "en", "de") is None
    assert borrowed_example("Wo ist die Bibliothek?", "Where is the library?", "en", "de") is None
    # the quoted-speech example's frame around a sentence that quotes no one: a speaker made up
    assert borrowed_example("„OK“, sagte XL, werde die beste Wahl.", "Ok an XL will be the best choice then.",
                            "en", "de") == 3
    assert borrowed_example("« D'accord », a déclaré XL.", "Ok an XL will be the best choice then.", "en", "fr") == 3
    # a name or term in quotation marks is no frame; nor is a quotation the source makes, or a saying it reports
    assert borrowed_example("in der Kategorie „Preis“ bewertet.", "rated in terms of price.", "en", "de") is None
    assert borrowed_example("„Ja“, sagte er.", '"Yes," he said.', "en", "de") is None
    assert borrowed_example("„Ja“, sagte er.", "Yes, he said.", "en", "de") is None
    assert borrowed_example("「はい」と彼は言った。", "Ok an XL.", "en", "ja") is None  # no spaces: no word to tell


def _translate(translator, sentence: str, copy_retries: int | None = None, split_broken: int | None = None,
               markers: bool = True, fragment_retry: bool = True, capital_retry: bool = True,
               number_retry: bool = True, clock_24h: bool = True) -> str:
    """``sentence`` as a finished one; ``copy_retries`` 0: as before the copy retry; ``split_broken``
    0: as before the halves; ``markers`` False: as before discourse markers were read off;
    ``fragment_retry`` False: as before the fragment retry; ``capital_retry`` False: as before the
    lower-case retry; ``number_retry`` False: as before the number retry; ``clock_24h`` False: as before
    clock times were read as 24-hour times."""
    options = translator.options
    translator.options = dataclasses.replace(translator.options, markers=markers, fragment_retry=fragment_retry,
                                             capital_retry=capital_retry, number_retry=number_retry,
                                             clock_24h=clock_24h)
    if copy_retries is not None:
        translator.options = dataclasses.replace(translator.options, copy_retries=copy_retries)
    if split_broken is not None:
        translator.options = dataclasses.replace(translator.options, split_broken=split_broken)
    translator.forget()  # clause pieces translated with the other setting are not reused
    try:
        return translator.translate(sentence, final=True).text
    finally:
        translator.options = options


@pytest.mark.parametrize("sentence", COPIED)
def test_a_short_informal_sentence_left_in_english_comes_back_translated(translator_de, sentence):
    before = _translate(translator_de, sentence, copy_retries=0, markers=False)
    assert is_copy(sentence, before), before  # what the first decode gives (unchanged)
    after = _translate(translator_de, sentence)
    assert after and not is_copy(sentence, after), after
    assert after.strip(" .!?").lower() != sentence.strip(" .!?").lower()
    assert not looks_english(after, sentence), after  # "Cheers, y'all." once came back as "We'll be back."


def test_a_one_word_reply_comes_back_translated(translator_de):
    for said in REPLIES:
        before = _translate(translator_de, said, copy_retries=0, markers=False)
        assert looks_english(before, said), before
        after = _translate(translator_de, said)
        assert after and not looks_english(after, said), (said, after)


def test_a_hesitation_is_not_translated(translator_de):
    for said in ("Um, yeah.", "So, um, what do you think?"):  # the first came back as "Um, yeah."
        after = _translate(translator_de, said)
        assert after and not is_copy(said, after) and "um" not in after.lower().replace(",", " ").split(), after
    assert _translate(translator_de, "Hmm.") == "Hmm."  # nothing else said: shown as it is


# names a caller spelled letter by letter (BConTrasT chat, tune split); asked to translate them, the bundled
# model wrote "1." and "1999 So schön ist es, wenn man sich in der Sonne sieht."
SPELLED = ("j e f f.", "j o h n s m i p h.")


def test_a_spelled_name_is_shown_as_it_is(translator_de):
    for said in SPELLED:
        assert _translate(translator_de, said) == said
    # inside a sentence the letters are kept aside like a name: not a copy for keeping them
    assert not is_copy("my name is j e f f.", "Mein Name ist j e f f.")
    assert is_copy("my name is j e f f.", "my name is j e f f.")


def test_what_is_spelled_out():
    from core.translate.quality import spelled_out

    assert all(spelled_out(t) for t in (*SPELLED, "J-O-H-N.", "a b 4 2 7"))
    # a letter or two, a number read out, a word of one letter in a sentence: not spelling
    assert not any(spelled_out(t) for t in ("A.", "A B.", "0 4 2 7", "I think so.", "my name is j e f f."))


# support-chat lines with an afternoon hour (BConTrasT, tune split) and the 24-hour time a German reader reads
AFTERNOON = (("Yes, 7:10 p.m.", "19:10"),
             ("ok, i have booked an appointment for 3pm today for your 2013 honda pilot that has an oil leak.", "15"))


def test_an_afternoon_hour_is_translated_as_a_24_hour_time(translator_de):
    for said, hour in AFTERNOON:
        before = _translate(translator_de, said, clock_24h=False)
        assert hour not in before, before  # the hour kept as said, "p.m." dropped or the line left in English
        after = _translate(translator_de, said)
        assert hour in after and "p.m" not in after and not invented_numbers(said, after), after


def test_clock_times_read_as_24_hour_times():
    from core.translate.clock import clock_24h

    cases = {"Yes, 7:10 p.m.": "Yes, 19:10.", "2:40pm, 7:10pm, and 9:30pm.": "14:40, 19:10, and 21:30.",
             "at 1:40pm. for 4 tickets": "at 13:40. for 4 tickets", "at 7 p.m. tonight": "at 19:00 tonight",
             "at 12 am and 12pm": "at 0:00 and 12:00", "9 amazing people at 9 a.m.?": "9 amazing people at 9:00?",
             # a range whose first hour says no a.m./p.m., no clock time, not an hour: as said
             "from 5 to 7 p.m.": "from 5 to 7 p.m.", "5-7pm": "5-7pm", "I am 25.": "I am 25.", "13 pm": "13 pm"}
    assert {said: clock_24h(said) for said in cases} == cases
    assert clock_24h("at 7 p.m.", target_lang="en") == "at 7 p.m." and clock_24h("a las 7 p.m.", "es") == "a las 7 p.m."
    # the minutes of such an hour are said ("8pm" → "20:00 Uhr"); an hour it never says is made up
    assert not invented_numbers("at 8pm", "um 20:00 Uhr") and invented_numbers("at 8pm", "um 21:00 Uhr") == ["21"]


def test_a_name_and_a_number_are_kept(translator_de):
    for sentence, kept in NAMES_AND_NUMBERS:
        before = _translate(translator_de, sentence, copy_retries=0)
        assert is_copy(sentence, before, names_aside=False), before  # what makes the copy retry run
        after = _translate(translator_de, sentence)
        assert not is_copy(sentence, after) and all(k in after for k in kept), (sentence, after)


def test_what_the_copy_retry_leaves_broken_is_translated_in_halves(translator_de):
    before = _translate(translator_de, LEFT_IN_ENGLISH, split_broken=0)
    assert is_copy(LEFT_IN_ENGLISH, before), before  # the copy retry alone leaves it in English
    after = _translate(translator_de, LEFT_IN_ENGLISH)
    assert not is_copy(LEFT_IN_ENGLISH, after) and not is_fragment(LEFT_IN_ENGLISH, after, "de"), after
    before = _translate(translator_de, CUT_SHORT, split_broken=0, fragment_retry=False)
    assert is_fragment(CUT_SHORT, before, "de"), before
    after = _translate(translator_de, CUT_SHORT)
    assert not is_fragment(CUT_SHORT, after, "de") and not is_copy(CUT_SHORT, after), after


# short lines of a support chat (BConTrasT, tune split) the bundled model cut to a fragment ("So, so.", "Wie oft?")
CUT_TO_A_FRAGMENT = ("Sometime this evening after 5:00 p.m.", "should i book it now?")


def test_a_fragment_is_decoded_again_from_its_least_sure_token(translator_de):
    from core.translate.quality import source_share

    for sentence in CUT_TO_A_FRAGMENT:
        before = _translate(translator_de, sentence, fragment_retry=False)
        after = _translate(translator_de, sentence)
        assert not is_fragment(sentence, after, "de") and keeps_enough(sentence, before, after), (before, after)
        assert source_share(sentence, after)[0] <= 0.25, after  # not a second choice that goes on in English
        if is_fragment(sentence, before, "de"):  # the retry ran (with AVX2's kernels: both)
            assert after != before
    assert source_share("What kind of food did you want?", "Was such a food did you want?") == (4 / 7, 7)
    assert source_share("Sometime this evening after 5:00 p.m.", "So, nach 5:00 Uhr am Abend.") == (0.0, 5)


def test_a_number_the_source_never_says_is_told():
    assert invented_numbers("A few years ago, I broke into my own house.", "1998, Ich habe …") == ["1998"]
    assert invented_numbers("one in 300 chance", "ein in 3000 Chance") == ["3000"]
    assert invented_numbers("around midnight", "um 11:00") == ["11"]  # "00" may be midnight's
    assert invented_numbers("TBC, to be continued.", "2019, 2020,") == ["2019", "2020"]
    # numbers said in words, p.m. hours, a figure written without its separator: none made up
    for source, translation in (("five percent of those 300", "5% der 300"), ("at 3 p.m.", "um 15 Uhr"),
                                ("twenty-five people", "25 Menschen"), ("the first time", "das 1. Mal"),
                                ("It costs 1,000 dollars.", "Es kostet 1000 Dollar."), ("It is 2.30.", "Es ist 2:30."),
                                ("the nineties", "die 90er"), ("a dozen eggs", "12 Eier")):
        assert invented_numbers(source, translation) == [], (source, translation)
    # the number words known are English ones: from Spanish "cinco" → "5" is no number made up
    assert invented_numbers("Vinieron cinco personas.", "5 Personen kamen.", "es") == []
    assert invented_numbers("Vinieron cinco personas.", "5 Personen kamen.") == ["5"]
    # where to ban: the space token that opens a number of its own (Gemma writes digits one by one, so a
    # digit banned gives another number); the digit where a number runs on from the source's
    assert invented_start([" ", "1", "9", "9", "8", ",", " Ich"], "A few years ago,") == 0
    assert invented_start(["ein", " in", " ", "3", "0", "0", "0", " Chance"], "one in 300 chance") == 6
    assert invented_start(["Es", " ist", " ", "2", ":", "3", "0"], "It is 2.30.") is None


# TED tst2016 (tune split): the bundled model wrote a year for "A few years ago" ("1998, Ich habe mich …")
MADE_UP_NUMBER = ("A few years ago, I broke into my own house.",)


def test_a_number_the_model_made_up_is_decoded_again(translator_de):
    for sentence in MADE_UP_NUMBER:
        before = _translate(translator_de, sentence, number_retry=False)
        after = _translate(translator_de, sentence)
        assert not invented_numbers(sentence, after) and keeps_enough(sentence, before, after), (before, after)
        assert not is_copy(sentence, after) and not is_fragment(sentence, after, "de"), after
        if invented_numbers(sentence, before):  # the retry ran
            assert after != before


def test_a_sentence_of_many_names_left_in_english_is_translated_in_halves(translator_de):
    before = _translate(translator_de, MANY_NAMES, split_broken=0)
    after = _translate(translator_de, MANY_NAMES)
    assert not is_copy(MANY_NAMES, after, names_aside=False) and not looks_english(after, MANY_NAMES), after
    # With AVX-512 kernels the copy retry alone leaves it in English (AVX2's decode it otherwise at once):
    # its halves lose one name of eight, and the first half's full stop is left out inside the sentence.
    if is_copy(MANY_NAMES, before, names_aside=False):
        assert keeps_enough(MANY_NAMES, before, after) and "McPartlin" in after, after
        assert ". und" not in after and ". and" not in after, after


def test_halves_do_not_lose_a_quotation(translator_de):
    after = _translate(translator_de, QUOTED)
    assert "it rhymes with Twp and Pwp" in after, after


def test_bench_translate_finished_counts_the_first_decode_and_what_is_shown(translator_de):
    from bench.translate import FINISHED_SETS, bench_finished, finished_markdown

    if not all(src.is_file() for _, split, src, _ in FINISHED_SETS if split != "heldout"):
        pytest.skip("NTREX-128 or the gathered spoken sets (../shared/data/gathered/spoken_mt) are missing")
    rows = bench_finished(translator_de, False, 4, lambda _: None)
    assert [(r["set"], r["output"]) for r in rows] == [
        (name, output) for name, split, _, _ in FINISHED_SETS if split != "heldout"
        for output in ("first decode", "shown")]
    ntrex_first, ntrex_shown = rows[0], rows[1]
    # NTREX's first line ("Welsh AMs worried about 'looking like muppets'") was left in English
    assert ntrex_first["copies"] >= 1 and ntrex_shown["copies"] < ntrex_first["copies"]
    assert ntrex_shown["retried"] >= 1 and all(r["sentences"] == 4 for r in rows)
    # the numbers column: the sentences shown with a number their source never says, each one listed
    from core.translate.numbers import invented_numbers

    for r in rows:
        assert r["made_up_numbers"] == len(r["numbered"])
        assert all(invented_numbers(s, t) for s, t in r["numbered"])
    table = finished_markdown({"date": "today", "machine": "here", "model": "m", "finished": rows}, "cmd")
    assert table.count("\n| NTREX-128 | news | 4 | ") == 1
    assert "| loops | numbers | chrF |" in table


# lines of real calls (SpokenWOZ, as the live path committed them) that came back in English after the copy
# retry and the halves: after "Okay," the small model goes on in English
OKAY = ("Okay, and I have two options for you.", "Okay, anything else that I can do for you?")


def test_discourse_markers_are_read_off_a_lines_start():
    assert split_markers("Okay, and I have two options for you.", "en", "de") == (["Okay"], "And I have two options "
                                                                                              "for you.")
    assert split_markers("Yes, yes. Tom is here.", "en", "fr") == (["Oui", "oui."], "Tom is here.")
    for whole in ("Well done.", "So there is a train.", "Okay so the time is fine.", "Nothing, okay."):
        assert split_markers(whole, "en", "de") == ([], whole)  # no comma or stop after it, or not at the start
    assert split_markers("Okay, and then?", "de", "en") == ([], "Okay, and then?")  # English sources only
    assert split_markers("Okay, and then?", "en", "xx") == ([], "Okay, and then?")  # no word list
    assert markers_alone(["Okay", "okay"], "Okay, okay.", "de") == "Okay, okay."
    assert markers_alone(["Ja"], "Yes?", "de") == "Ja?" and markers_alone(["はい"], "Yes.", "ja") == "はい。"
    # the rest's first word in lower case where only its place capitalised it; names and German nouns kept
    assert with_markers(["Ja"], "Ich möchte ein Taxi.", "Yes, I want a taxi.", "de") == "Ja, ich möchte ein Taxi."
    assert with_markers(["Ja"], "Kaffee ist fertig.", "Yes, coffee is ready.", "de") == "Ja, Kaffee ist fertig."
    assert with_markers(["Ja"], "Sie haben Recht.", "Yes, you are right.", "de") == "Ja, Sie haben Recht."
    assert with_markers(["Non"], "Tom est ici.", "No, Tom is here.", "fr") == "Non, Tom est ici."
    assert with_markers(["Oui"], "Je veux un taxi.", "Yes, I want a taxi.", "fr") == "Oui, je veux un taxi."
    assert with_markers(["はい"], "タクシーが欲しい。", "Yes, I want a taxi.", "ja") == "はい、タクシーが欲しい。"


def test_set_phrases_are_read_off_like_markers():
    assert split_markers("Thanks, see you tomorrow.", "en", "de") == (["Danke", "bis morgen"], "")
    assert split_markers("Cheers, y’all.", "en", "de") == (["Danke", "Leute"], "")  # either apostrophe
    assert split_markers("Good morning, everyone. Let's start.", "en", "de") == (["Guten Morgen", "alle zusammen."],
                                                                                "Let's start.")
    # a sentence of markers before the rest ends in the translation too
    assert with_markers(["Oui", "oui."], "Tom est ici.", "Yes, yes. Tom is here.", "fr") == "Oui, oui. Tom est ici."
    assert with_markers(["はい。"], "トムはここにいます。", "Yes. Tom is here.", "ja") == "はい。トムはここにいます。"
    assert markers_alone(["Danke", "alle zusammen."], "Thanks, everyone. Hmm.", "de") == "Danke, alle zusammen."
    assert split_markers("Sorry, I missed that.", "en", "de") == (["Entschuldigung"], "I missed that.")
    assert split_markers("Okay, got it.", "en", "de", phrases=False) == (["Okay"], "Got it.")  # markers alone
    said = split_markers("I got it. Thank you.", "en", "de")[0]  # two sentences stay two
    assert said == ["Ich habe es verstanden.", "Danke"]
    assert markers_alone(said, "I got it. Thank you.", "de") == "Ich habe es verstanden. Danke."
    assert split_markers("Mm hmm.", "en", "fr") == (["Oui"], "")
    assert split_markers("Thank you", "en", "de")[0] == ["Danke"]  # the line's end ends it too
    for whole in ("Thank you for coming.", "Everyone.", "Sir, your table is ready.", "Great news, everyone.",
                  "Good work."):
        assert split_markers(whole, "en", "de") == ([], whole)  # a phrase inside a sentence; an address alone
    assert split_tail("That's all, thank you.", "en", "de") == ("That's all.", ["danke"])
    assert split_tail("Your table is ready, thank you, sir!", "en", "fr") == ("Your table is ready!",
                                                                            ["merci", "monsieur"])
    assert split_tail("It leaves at 9, right?", "en", "es") == ("It leaves at 9.", ["¿verdad"])  # the tag asks
    for whole in ("Turn right.", "It is on the right.", "Thanks.", "I said thank you."):
        assert split_tail(whole, "en", "de") == (whole, [])
    assert split_tail("It leaves at 9, right?", "en", "ja") == ("It leaves at 9, right?", [])  # no tag in Japanese
    assert with_tail("Es fährt um 9.", ["oder"], "It leaves at 9, right.", "de") == "Es fährt um 9, oder?"
    assert with_tail("Sale a las 9.", ["¿verdad"], "It leaves at 9, right?", "es") == "Sale a las 9, ¿verdad?"
    assert with_tail("これで全部です。", ["ありがとうございます"], "That's all, thank you.", "ja") == \
        "これで全部です、ありがとうございます。"
    assert markers_alone(["お元気ですか"], "How are you?", "ja") == "お元気ですか？"
    assert markers_alone(["Cómo estás"], "How are you?", "es") == "¿Cómo estás?"


def test_a_line_of_set_phrases_is_said_from_the_phrasebook(translator_de):
    before = _translate(translator_de, "See you later.", copy_retries=0, markers=False)
    assert is_copy("See you later.", before), before  # the first decode gives it back in English
    said = {line: _translate(translator_de, line) for line in PHRASES_SAID}
    assert said == PHRASES_SAID, said  # before: "Jetzt.", "Was ist das?", „See you later“, sagte der Minister.
    for line in ("I'll take it, thanks.", "No, that will be all, thanks."):  # the model said "dank"
        assert _translate(translator_de, line, markers=False).endswith(", dank."), line
        assert _translate(translator_de, line).endswith(", danke."), line
    after = _translate(translator_de, "Thanks, and the train leaves at 9 p.m.?")
    assert after.startswith("Danke, ") and ("21" in after or "9" in after), after


def test_a_line_opening_with_okay_is_translated_not_copied(translator_de):
    for line in OKAY:
        after = _translate(translator_de, line)
        assert after.startswith("Okay, ") and not is_copy(line, after), after
        assert not looks_english(after.removeprefix("Okay, "), line), after
    assert _translate(translator_de, "Okay, okay.") == "Okay, okay."
    assert _translate(translator_de, "Okay, 318.") == "Okay, 318."
    # a growing line: the rest's translation is the draft of the next update, and the markers are said once
    translator_de.forget()
    partial = translator_de.translate("Okay, and I have two", None, final=False)
    done = translator_de.translate(OKAY[0], partial.tokens, final=True, draft_source="Okay, and I have two")
    assert done.text == _translate(translator_de, OKAY[0]) and done.text.count("Okay") == 1, (partial.text, done.text)


def test_lower_case_typing_is_read_as_a_transcript_writes_it():
    assert as_written("anything else i can help with today?") == "Anything else I can help with today?"
    assert as_written("ok. let me look into that for you.") == "Ok. Let me look into that for you."
    assert as_written("sure. i'm fine, i think.") == "Sure. I'm fine, I think."
    assert as_written("iPhone is here. 3 pizzas.") == "iPhone is here. 3 pizzas."  # a name's own case stays
    assert as_written("j o h n s m i t h.") == "j o h n s m i t h."  # a name spelled out: no pronoun in it
    assert as_written("anything else i can help with?", "de") == "anything else i can help with?"
    # a transcript's line that goes on from the one before is not typing: it begins in lower case
    assert as_written("and I have two options for you.") == "and I have two options for you."
    assert as_written("guest house.") == "guest house."
    assert typed_in_lower_case("Ok. let me look.") and not typed_in_lower_case("would you like anything else?")


def test_casual_yes_and_no_are_markers():
    assert split_markers("Nope. That's all I need.", "en", "de") == (["Nein."], "That's all I need.")
    assert split_markers("Yup, I know.", "en", "fr") == (["Oui"], "I know.")


# BConTrasT chat (tune split, CC-BY-SA 4.0), typed in lower case: "Klar. was würdest du?" before; and a line with a
# prompt example's words made up before it ("in the 11th hour of the 11th day of the 11th month, 2011, 11:25 amc …")
LOWER_CASE = ("Sure thing. what would you like?",
              "amc pacific place 11 is showing happy death day 2u at 12:25pm. this showtime is actually sooner.")
# a line of three sentences (the same set): translated whole, "30 Minuten? Super!"
SENTENCES = "30 minutes? Okay, wonderful. Appreciate it."
# copied whole before: each half's first copy retry banned its number ("3" became "2", "2" became "1") and the
# retries left did not reach German ("2 tickets to see Aquaman at 7:10pm …" is translated now with AVX-512
# kernels; with AVX2's the second half drops its "$24" and the line stays as it was)
NUMBERS = "3 large thin crust pizzas, 2 veggie lovers, 1 chicken alfredo."


def test_lower_case_typing_is_translated_as_the_same_line_written(translator_de):
    for typed in LOWER_CASE:
        written = as_written(typed)
        assert written != typed and _translate(translator_de, typed) == _translate(translator_de, written)
        after = _translate(translator_de, typed)
        assert all(part[:1].isupper() or part[:1].isdigit() for part in sentence_parts(after)), after
        assert "11th" not in after, after


# BConTrasT chat (tune split, lines 300-1902, CC-BY-SA 4.0): an agent's question typed in lower case, copied
# with "what" alone translated ("was kind of crust would you like?"), by the first decode and every retry
LOWER_CASE_COPY = "what type of crust would you like?"


def test_a_line_copied_in_lower_case_is_translated_again_as_a_sentence(translator_de):
    from core.translate.quality import source_share

    before = _translate(translator_de, LOWER_CASE_COPY, capital_retry=False)
    assert is_copy(LOWER_CASE_COPY, before), before
    after = _translate(translator_de, LOWER_CASE_COPY)
    assert not is_copy(LOWER_CASE_COPY, after) and not looks_english(after, LOWER_CASE_COPY), after
    assert source_share(LOWER_CASE_COPY, after)[0] < source_share(LOWER_CASE_COPY, before)[0]
    assert after[:1].isupper(), after
    # a line translated the first time is not tried again; nor is a spelled-out name or a line in capitals
    line = "and I have two options for you."
    assert _translate(translator_de, line) == _translate(translator_de, line, capital_retry=False)
    for kept in ("j o h n s o n.", "Chando's Taco's."):
        assert _translate(translator_de, kept) == _translate(translator_de, kept, capital_retry=False)


# BConTrasT chat (tune split, lines 300-1902): the first decode put the quoted-speech example's frame around it
MADE_UP_SPEAKER = "Ok an XL will be the best choice then."


def test_a_speaker_made_up_with_the_quoted_speech_example_is_decoded_again_without_it(translator_de):
    from core.translate.prompts import speech_frame

    translator_de.forget()
    first = translator_de._translate(MADE_UP_SPEAKER, None, True, 0).text  # the first decode, as before
    shown = _translate(translator_de, MADE_UP_SPEAKER)
    assert not speech_frame(shown, MADE_UP_SPEAKER, "de") and "sagte" not in shown, shown
    if speech_frame(first, MADE_UP_SPEAKER, "de"):  # "„OK“, sagte XL, werde die beste Wahl." (AVX-512 kernels)
        assert shown != first


def test_a_line_of_sentences_is_translated_sentence_by_sentence(translator_de):
    parts = sentence_parts(SENTENCES)
    assert parts == ["30 minutes?", "Okay, wonderful.", "Appreciate it."]
    after = _translate(translator_de, SENTENCES)
    assert after == " ".join(_translate(translator_de, part) for part in parts), after
    assert after.startswith("30 ") and after.count("?") == 1 and not looks_english(after, SENTENCES), after


def test_a_line_dense_with_numbers_comes_back_translated_with_them(translator_de):
    after = _translate(translator_de, NUMBERS)
    assert not is_copy(NUMBERS, after, names_aside=False) and not looks_english(after, NUMBERS), after
    assert all(n in after for n in ("3", "2", "1")), after
