"""Set phrases of conversation ("Thank you.", "See you tomorrow.", "Got it.") said from a phrasebook.

Thanks, greetings, farewells, apologies and acknowledgements make up much of a call and are the
lines the bundled model translates worst: with no sentence around them it gives them back in English
("See you later." → „See you later“, sagte der Minister.) or says something else ("Got it." →
"Jetzt.", "Sounds good." → "Was ist das?", "Bye bye." → "Ab zum Ende."). Each has one plain
translation, so a line made of them, or opening with them, is said from this table the way
:mod:`core.translate.markers` says "Okay," and "Yes,", and the model translates the rest.

Each translation is written as it reads inside a sentence (German nouns keep their capital); the
first word of a line is capitalised where it is said. An address ("everyone", "sir", "y'all") counts
only after another phrase or marker: "Thanks, everyone." but not "Everyone." alone.
"""

from __future__ import annotations

LANGUAGES = ("de", "fr", "es", "it", "pt", "nl", "ru", "ja", "zh", "ko")

# English (lower case, straight apostrophes) | de | fr | es | it | pt | nl | ru | ja | zh | ko
_TABLE = """
thanks | danke | merci | gracias | grazie | obrigado | bedankt | спасибо | ありがとう | 谢谢 | 고마워요
thank you | danke | merci | gracias | grazie | obrigado | dank je | спасибо | ありがとうございます | 谢谢 | 감사합니다
thanks a lot | vielen Dank | merci beaucoup | muchas gracias | grazie mille | muito obrigado | heel erg bedankt | большое спасибо | どうもありがとう | 非常感谢 | 정말 고마워요
thanks so much | vielen Dank | merci beaucoup | muchas gracias | grazie mille | muito obrigado | heel erg bedankt | большое спасибо | どうもありがとう | 非常感谢 | 정말 고마워요
thank you so much | vielen Dank | merci beaucoup | muchas gracias | grazie mille | muito obrigado | heel erg bedankt | большое спасибо | 本当にありがとうございます | 非常感谢 | 정말 감사합니다
thank you very much | vielen Dank | merci beaucoup | muchas gracias | grazie mille | muito obrigado | hartelijk dank | большое спасибо | どうもありがとうございます | 非常感谢 | 대단히 감사합니다
thanks again | nochmals danke | merci encore | gracias de nuevo | grazie ancora | obrigado mais uma vez | nogmaals bedankt | ещё раз спасибо | 改めてありがとう | 再次感谢 | 다시 한번 고마워요
thank you again | nochmals danke | merci encore | gracias de nuevo | grazie ancora | obrigado mais uma vez | nogmaals bedankt | ещё раз спасибо | 改めてありがとうございます | 再次感谢 | 다시 한번 감사합니다
cheers | danke | merci | gracias | grazie | obrigado | bedankt | спасибо | ありがとう | 谢谢 | 고마워요
no thanks | nein danke | non merci | no, gracias | no, grazie | não, obrigado | nee, bedankt | нет, спасибо | いいえ、結構です | 不用了，谢谢 | 아니요, 괜찮아요
no thank you | nein danke | non merci | no, gracias | no, grazie | não, obrigado | nee, dank je | нет, спасибо | いいえ、結構です | 不用了，谢谢 | 아니요, 괜찮습니다
you're welcome | gern geschehen | de rien | de nada | prego | de nada | graag gedaan | пожалуйста | どういたしまして | 不客气 | 천만에요
you're very welcome | gern geschehen | je vous en prie | de nada | prego | de nada | graag gedaan | не за что | どういたしまして | 不客气 | 천만에요
you are very welcome | sehr gern geschehen | je vous en prie | de nada | prego | de nada | graag gedaan | не за что | どういたしまして | 不客气 | 천만에요
you too | gleichfalls | vous aussi | igualmente | anche a te | você também | jij ook | и вам того же | あなたも | 你也是 | 당신도요
you are welcome | gern geschehen | de rien | de nada | prego | de nada | graag gedaan | пожалуйста | どういたしまして | 不客气 | 천만에요
no problem | kein Problem | pas de problème | no hay problema | nessun problema | sem problema | geen probleem | без проблем | 問題ありません | 没问题 | 문제없어요
no worries | keine Sorge | pas de souci | no te preocupes | nessun problema | sem problema | geen zorgen | не беспокойтесь | 大丈夫です | 没关系 | 걱정 마세요
please | bitte | s'il vous plaît | por favor | per favore | por favor | alstublieft | пожалуйста | お願いします | 请 | 부탁해요
sorry | Entschuldigung | pardon | perdón | scusa | desculpe | sorry | извините | すみません | 对不起 | 죄송해요
i'm sorry | es tut mir leid | je suis désolé | lo siento | mi dispiace | sinto muito | het spijt me | мне жаль | すみません | 对不起 | 죄송합니다
excuse me | Entschuldigung | excusez-moi | disculpe | mi scusi | com licença | pardon | извините | すみません | 打扰一下 | 실례합니다
bye | tschüss | salut | adiós | ciao | tchau | doei | пока | じゃあね | 再见 | 안녕
bye bye | tschüss | au revoir | adiós | ciao ciao | tchau | dag | пока-пока | バイバイ | 拜拜 | 안녕
goodbye | auf Wiedersehen | au revoir | adiós | arrivederci | adeus | tot ziens | до свидания | さようなら | 再见 | 안녕히 계세요
byebye | tschüss | au revoir | adiós | ciao ciao | tchau | dag | пока-пока | バイバイ | 拜拜 | 안녕
good bye | auf Wiedersehen | au revoir | adiós | arrivederci | adeus | tot ziens | до свидания | さようなら | 再见 | 안녕히 계세요
see you | bis dann | à plus | hasta luego | ci vediamo | até logo | tot ziens | увидимся | またね | 回头见 | 또 봐요
see you later | bis später | à plus tard | hasta luego | a dopo | até mais tarde | tot later | до встречи | また後で | 回头见 | 나중에 봐요
see you soon | bis bald | à bientôt | hasta pronto | a presto | até breve | tot snel | до скорого | また近いうちに | 回头见 | 곧 봐요
see you tomorrow | bis morgen | à demain | hasta mañana | a domani | até amanhã | tot morgen | до завтра | また明日 | 明天见 | 내일 봐요
talk to you later | bis später | à plus tard | hablamos luego | ci sentiamo dopo | falamos depois | spreek je later | до связи | また後で話しましょう | 回头聊 | 나중에 얘기해요
take care | mach's gut | prends soin de toi | cuídate | stammi bene | se cuida | pas goed op jezelf | берегите себя | お元気で | 保重 | 잘 지내요
have a nice day | schönen Tag noch | bonne journée | que tengas un buen día | buona giornata | tenha um bom dia | fijne dag nog | хорошего дня | 良い一日を | 祝你今天愉快 | 좋은 하루 보내세요
have a good day | schönen Tag noch | bonne journée | que tengas un buen día | buona giornata | tenha um bom dia | fijne dag nog | хорошего дня | 良い一日を | 祝你今天愉快 | 좋은 하루 보내세요
have a good weekend | schönes Wochenende | bon week-end | buen fin de semana | buon fine settimana | bom fim de semana | fijn weekend | хороших выходных | 良い週末を | 周末愉快 | 주말 잘 보내세요
have a nice weekend | schönes Wochenende | bon week-end | buen fin de semana | buon fine settimana | bom fim de semana | fijn weekend | хороших выходных | 良い週末を | 周末愉快 | 주말 잘 보내세요
have a great day | schönen Tag noch | bonne journée | que tengas un buen día | buona giornata | tenha um ótimo dia | fijne dag nog | хорошего дня | 良い一日を | 祝你今天愉快 | 좋은 하루 보내세요
drive safe | fahren Sie vorsichtig | soyez prudent sur la route | maneja con cuidado | guida con prudenza | dirija com cuidado | rij voorzichtig | осторожнее на дороге | 運転に気をつけて | 路上小心 | 운전 조심하세요
good night | gute Nacht | bonne nuit | buenas noches | buona notte | boa noite | goedenacht | спокойной ночи | おやすみなさい | 晚安 | 안녕히 주무세요
good morning | guten Morgen | bonjour | buenos días | buongiorno | bom dia | goedemorgen | доброе утро | おはようございます | 早上好 | 좋은 아침이에요
good afternoon | guten Tag | bonjour | buenas tardes | buon pomeriggio | boa tarde | goedemiddag | добрый день | こんにちは | 下午好 | 안녕하세요
good evening | guten Abend | bonsoir | buenas noches | buonasera | boa noite | goedenavond | добрый вечер | こんばんは | 晚上好 | 안녕하세요
hi there | hallo | bonjour | hola | ciao | olá | hallo | привет | こんにちは | 你好 | 안녕하세요
hey | hallo | salut | hola | ciao | olá | hoi | привет | やあ | 嘿 | 안녕
nice to meet you | freut mich | enchanté | mucho gusto | piacere | prazer | aangenaam | приятно познакомиться | はじめまして | 很高兴认识你 | 만나서 반가워요
how are you | wie geht's | comment ça va | cómo estás | come stai | como vai | hoe gaat het | как дела | お元気ですか | 你好吗 | 잘 지내세요
how are you doing | wie geht's | comment ça va | cómo te va | come va | como você está | hoe gaat het met je | как у вас дела | 調子はどうですか | 你最近怎么样 | 어떻게 지내세요
got it | verstanden | compris | entendido | capito | entendi | begrepen | понятно | わかりました | 明白了 | 알겠어요
i got it | ich habe es verstanden | j'ai compris | entendido | ho capito | entendi | begrepen | понял | わかりました | 我明白了 | 알겠어요
understood | verstanden | compris | entendido | capito | entendido | begrepen | понятно | 了解しました | 明白 | 알겠습니다
i see | verstehe | je vois | ya veo | capisco | entendo | ik snap het | понятно | なるほど | 我明白了 | 그렇군요
makes sense | ergibt Sinn | c'est logique | tiene sentido | ha senso | faz sentido | logisch | логично | なるほど | 有道理 | 말이 되네요
that makes sense | das ergibt Sinn | c'est logique | tiene sentido | ha senso | faz sentido | dat is logisch | это логично | なるほど | 有道理 | 말이 되네요
sounds good | klingt gut | ça me va | suena bien | va bene | parece bom | klinkt goed | звучит хорошо | いいですね | 听起来不错 | 좋아요
that sounds good | das klingt gut | ça me va | suena bien | va bene | parece bom | dat klinkt goed | звучит хорошо | いいですね | 听起来不错 | 좋아요
sounds great | klingt super | ça me va très bien | suena genial | ottimo | parece ótimo | klinkt geweldig | звучит отлично | いいですね | 听起来很棒 | 아주 좋아요
great | super | super | genial | ottimo | ótimo | geweldig | отлично | いいですね | 太好了 | 좋아요
perfect | perfekt | parfait | perfecto | perfetto | perfeito | perfect | отлично | 完璧です | 完美 | 완벽해요
exactly | genau | exactement | exacto | esatto | exatamente | precies | именно | その通りです | 没错 | 맞아요
of course | natürlich | bien sûr | por supuesto | certo | claro | natuurlijk | конечно | もちろん | 当然 | 물론이죠
absolutely | absolut | absolument | absolutamente | assolutamente | com certeza | absoluut | безусловно | もちろんです | 当然 | 물론이죠
definitely | auf jeden Fall | absolument | sin duda | sicuramente | com certeza | zeker | обязательно | もちろんです | 一定 | 물론이죠
good | gut | bien | bien | bene | bom | goed | хорошо | いいですね | 好 | 좋아요
very good | sehr gut | très bien | muy bien | molto bene | muito bom | heel goed | очень хорошо | とてもいいです | 很好 | 아주 좋아요
fine | gut | d'accord | vale | va bene | está bem | prima | хорошо | 大丈夫です | 好的 | 좋아요
that's fine | das ist in Ordnung | ça va | está bien | va bene | está bem | dat is prima | всё в порядке | 大丈夫です | 没问题 | 괜찮아요
that's right | das stimmt | c'est exact | así es | esatto | isso mesmo | dat klopt | верно | その通りです | 对 | 맞아요
that's correct | das ist richtig | c'est exact | es correcto | è corretto | está correto | dat is juist | верно | その通りです | 没错 | 맞습니다
that's great | das ist super | c'est super | genial | ottimo | que ótimo | geweldig | отлично | いいですね | 太好了 | 좋네요
correct | richtig | exact | correcto | esatto | correto | juist | верно | その通りです | 对 | 맞아요
that is correct | das ist richtig | c'est exact | es correcto | è corretto | está correto | dat is juist | верно | その通りです | 没错 | 맞습니다
that is right | das stimmt | c'est exact | así es | esatto | isso mesmo | dat klopt | верно | その通りです | 对 | 맞아요
is that right | stimmt das | c'est bien ça | es correcto | è giusto | está certo | klopt dat | верно | 合っていますか | 对吗 | 맞나요
is that correct | ist das richtig | c'est bien ça | es correcto | è corretto | está correto | klopt dat | верно | 合っていますか | 对吗 | 맞나요
that's it | das war's | c'est tout | eso es todo | è tutto | é isso | dat was het | это всё | 以上です | 就这些 | 그게 다예요
that's all | das ist alles | c'est tout | eso es todo | è tutto | é tudo | dat is alles | это всё | 以上です | 就这些 | 그게 다예요
anything else | sonst noch etwas | autre chose | algo más | altro | mais alguma coisa | verder nog iets | что-нибудь ещё | 他に何か | 还有别的吗 | 다른 건요
you got it | geht klar | c'est noté | entendido | d'accordo | pode deixar | komt in orde | понял | かしこまりました | 好的 | 알겠습니다
sure thing | klar | bien sûr | claro | certo | claro | zeker | конечно | もちろん | 当然 | 물론이죠
will do | mache ich | je le ferai | lo haré | lo farò | pode deixar | doe ik | сделаю | そうします | 好的 | 그럴게요
wonderful | wunderbar | merveilleux | maravilloso | meraviglioso | maravilhoso | geweldig | замечательно | 素晴らしい | 太好了 | 훌륭해요
awesome | super | génial | genial | fantastico | incrível | geweldig | отлично | すごい | 太棒了 | 멋져요
yup | ja | oui | sí | sì | sim | ja | ага | うん | 嗯 | 네
mm-hmm | ja | oui | sí | sì | sim | ja | угу | うん | 嗯 | 네
mhm | ja | oui | sí | sì | sim | ja | угу | うん | 嗯 | 네
mmhmm | ja | oui | sí | sì | sim | ja | угу | うん | 嗯 | 네
uh-huh | ja | oui | sí | sì | sim | ja | угу | うん | 嗯 | 네
me too | ich auch | moi aussi | yo también | anch'io | eu também | ik ook | я тоже | 私も | 我也是 | 저도요
i don't know | ich weiß nicht | je ne sais pas | no lo sé | non lo so | não sei | ik weet het niet | не знаю | わかりません | 我不知道 | 모르겠어요
i'm not sure | ich bin mir nicht sicher | je ne suis pas sûr | no estoy seguro | non sono sicuro | não tenho certeza | ik weet het niet zeker | не уверен | よくわかりません | 我不确定 | 잘 모르겠어요
i think so | ich glaube schon | je pense que oui | creo que sí | penso di sì | acho que sim | ik denk het wel | думаю, да | そう思います | 我想是的 | 그런 것 같아요
i don't think so | ich glaube nicht | je ne pense pas | creo que no | non credo | acho que não | ik denk het niet | не думаю | そうは思いません | 我不这么认为 | 아닌 것 같아요
never mind | schon gut | laisse tomber | no importa | non importa | deixa pra lá | laat maar | неважно | 気にしないで | 没关系 | 신경 쓰지 마세요
hold on | Moment | attendez | espera | aspetta | espera | wacht even | подождите | ちょっと待って | 等一下 | 잠깐만요
one moment | einen Moment | un instant | un momento | un momento | um momento | een moment | одну минуту | 少々お待ちください | 稍等 | 잠시만요
just a moment | einen Moment | un instant | un momento | un momento | só um momento | een momentje | минутку | 少々お待ちください | 稍等一下 | 잠시만요
one second | eine Sekunde | une seconde | un segundo | un secondo | um segundo | een seconde | секунду | ちょっと待って | 稍等 | 잠깐만요
just a second | eine Sekunde | une seconde | un segundo | un secondo | só um segundo | een secondje | секундочку | ちょっと待って | 稍等一下 | 잠깐만요
really | wirklich | vraiment | de verdad | davvero | sério | echt | правда | 本当に | 真的 | 정말요
congratulations | herzlichen Glückwunsch | félicitations | felicidades | congratulazioni | parabéns | gefeliciteerd | поздравляю | おめでとうございます | 恭喜 | 축하해요
good luck | viel Glück | bonne chance | buena suerte | buona fortuna | boa sorte | veel succes | удачи | 頑張ってください | 祝你好运 | 행운을 빌어요
welcome | willkommen | bienvenue | bienvenido | benvenuto | bem-vindo | welkom | добро пожаловать | ようこそ | 欢迎 | 환영합니다
"""

# addresses: said only after a phrase or marker ("Thanks, everyone.")
_ADDRESSES = """
everyone | alle zusammen | tout le monde | a todos | a tutti | pessoal | allemaal | всем | 皆さん | 大家 | 여러분
everybody | alle zusammen | tout le monde | a todos | a tutti | pessoal | allemaal | всем | 皆さん | 大家 | 여러분
guys | Leute | les amis | chicos | ragazzi | pessoal | jongens | ребята | 皆さん | 伙计们 | 여러분
you guys | Leute | les amis | chicos | ragazzi | pessoal | jongens | ребята | 皆さん | 伙计们 | 여러분
y'all | Leute | tout le monde | a todos | a tutti | pessoal | allemaal | все | 皆さん | 大家 | 여러분
you all | alle zusammen | tout le monde | a todos | a tutti | pessoal | allemaal | все | 皆さん | 大家 | 여러분
folks | Leute | les amis | amigos | gente | pessoal | mensen | друзья | 皆さん | 朋友们 | 여러분
sir | mein Herr | monsieur | señor | signore | senhor | meneer | сэр | お客様 | 先生 | 선생님
ma'am | meine Dame | madame | señora | signora | senhora | mevrouw | мэм | お客様 | 女士 | 고객님
madam | meine Dame | madame | señora | signora | senhora | mevrouw | мадам | お客様 | 女士 | 고객님
"""


def _parse(table: str) -> dict[str, dict[str, str]]:
    phrases: dict[str, dict[str, str]] = {}
    for row in table.strip().splitlines():
        english, *said = (cell.strip() for cell in row.split("|"))
        assert len(said) == len(LANGUAGES), row
        phrases[english] = dict(zip(LANGUAGES, said, strict=True))
    return phrases


PHRASES: dict[str, dict[str, str]] = _parse(_TABLE)
ADDRESSES: dict[str, dict[str, str]] = _parse(_ADDRESSES)
