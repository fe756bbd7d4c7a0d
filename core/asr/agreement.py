"""LocalAgreement-2: commit what two consecutive hypotheses agree on.

The policy of whisper_streaming (Macháček et al., 2023), written for Sotto:
each new hypothesis of the audio buffer is compared with the previous one and
their longest common word prefix is committed; the rest stays tentative. Where
no second hypothesis can come (the end of an utterance or of the stream) or the
window fills up without agreement, the transcriber forces a commit through
:meth:`HypothesisBuffer.force_commit` or :meth:`HypothesisBuffer.commit_final`;
the buffer alone changes its state.
"""

from __future__ import annotations

from ..stream import Word


def _key(word: Word) -> str:
    """Compare words without case or punctuation ('Americans.' agrees with 'americans,')."""
    return "".join(ch for ch in word.text.lower() if ch.isalnum() or ch == "'")


class HypothesisBuffer:
    """Holds the unconfirmed tail and decides what to commit."""

    def __init__(self) -> None:
        self.committed_in_buffer: list[Word] = []
        self.previous: list[Word] = []  # last hypothesis, after the committed part
        self.new: list[Word] = []
        self.last_committed_time = 0.0

    def insert(self, words: list[Word]) -> None:
        """Take a new hypothesis (absolute times); drop what is already committed.

        A word counts as new when its midpoint lies after the end of the last
        committed word: word timestamps shift by a few tens of milliseconds
        between hypotheses, and a start-time cut would drop a word that now
        starts slightly earlier.
        """
        new = [w for w in words if (w.start + w.end) / 2 > self.last_committed_time]
        if new and self.committed_in_buffer and abs(new[0].start - self.last_committed_time) < 1.0:
            # The hypothesis may repeat the last committed words: drop an n-gram overlap.
            committed = self.committed_in_buffer
            for n in range(min(len(committed), len(new), 5), 0, -1):
                tail = [_key(w) for w in committed[-n:]]
                head = [_key(w) for w in new[:n]]
                if tail == head:
                    new = new[n:]
                    break
        self.new = new

    def flush(self) -> list[Word]:
        """Commit the longest common prefix of the new and previous hypotheses."""
        commit: list[Word] = []
        while self.new and self.previous and _key(self.new[0]) == _key(self.previous[0]):
            word = self.new.pop(0)
            self.previous.pop(0)
            commit.append(word)
        self.previous = self.new
        self.new = []
        self._committed(commit)
        return commit

    def force_commit(self) -> list[Word]:
        """Commit the unconfirmed words as they stand, without a second hypothesis agreeing (the end
        of an utterance or of the stream, or a window full with no agreement); returns them."""
        forced, self.previous = self.previous, []
        self._committed(forced)
        return forced

    def commit_first(self, n: int) -> list[Word]:
        """Commit the first ``n`` unconfirmed words without a second hypothesis agreeing (a decode in a
        pause has settled them); returns them."""
        settled, self.previous = self.previous[:n], self.previous[n:]
        self._committed(settled)
        return settled

    def commit_final(self, words: list[Word]) -> list[Word]:
        """Take the last hypothesis of the stream (absolute times) and commit all of it that is new:
        no later one will confirm it; returns the words committed."""
        self.insert(words)
        final, self.new = self.new, []
        self.previous = []
        self._committed(final)
        return final

    def _committed(self, words: list[Word]) -> None:
        if words:
            self.last_committed_time = words[-1].end
            self.committed_in_buffer.extend(words)

    def pop_committed(self, time: float) -> None:
        """Forget committed words that end before ``time`` (the buffer was trimmed there)."""
        self.committed_in_buffer = [w for w in self.committed_in_buffer if w.end > time]

    def tentative(self) -> list[Word]:
        """The unconfirmed words of the last hypothesis."""
        return list(self.previous)

    def reset(self, time: float) -> None:
        """Start afresh at ``time`` (after an utterance was finalised)."""
        self.committed_in_buffer = []
        self.previous = []
        self.new = []
        self.last_committed_time = time
