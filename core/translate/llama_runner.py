"""A thin owner of one llama.cpp context: evaluate tokens, read logits, roll back.

The high-level ``llama_cpp.Llama`` object loads the model and context; this
class keeps its own list of evaluated tokens so callers can ask for the logits
of every position of a batch (for verification) and truncate the KV cache to
any prefix (``llama_memory_seq_rm``) to reuse what did not change.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import logger
from ..errors import Interrupted, ModelError

_native_log_callback = None
_load_messages: list[str] | None = None  # llama.cpp's warnings and errors while a model loads (under _params_lock)


def _route_native_log() -> None:
    """Send llama.cpp's own log lines to Sotto's log file instead of the terminal."""
    global _native_log_callback
    if _native_log_callback is not None:
        return
    import ctypes

    import llama_cpp

    levels = {3: logging.WARNING, 4: logging.ERROR}  # ggml: 1 debug, 2 info, 3 warn, 4 error, 5 continue

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        message = text.decode("utf-8", errors="replace").rstrip()
        if message and message != ".":
            logger.log(levels.get(level, logging.DEBUG), "llama.cpp: %s", message)
            if level >= 3 and _load_messages is not None:
                _load_messages.append(message)

    _native_log_callback = callback  # keep a reference: C holds only the pointer
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


# llama.cpp's CPU matmul gives a token different numerics depending on the batch it is
# evaluated in (measured on Gemma 3 270M: logits up to 1.8 apart, enough to change greedy
# tokens). Speculative decoding must nevertheless reproduce plain decoding exactly, so:
# - drafts are verified in calls of at most SMALL_CHUNK tokens: with the llamafile kernels
#   off (our build) and weight repacking off (below), such calls give bit-identical logits
#   to decoding one token at a time (measured for 2…7; 8 and more differ);
# - prompts are always evaluated in calls of exactly PROMPT_CHUNK tokens aligned at
#   multiples of PROMPT_CHUNK from position 0 (plus one call for the remainder), so a cached
#   position was computed by the very call a fresh evaluation would make; only positions in
#   complete chunks are reused across translations.
PROMPT_CHUNK = 16
SMALL_CHUNK = 7
# At load, a verification call of this many tokens is compared with decoding them one at a time
# on the backend in use (CPU, CUDA, Metal): β = 0 is exactly greedy only where they are bit-identical.
# 4 tokens cost about 0.1 s with Gemma 3 270M on 2 cores; SMALL_CHUNK (7) would cost about 0.25 s.
BATCH_CHECK_TOKENS = 4

_params_lock = threading.Lock()

# Loading: the weights are read into the process's own memory instead of being mapped
# from the file (llama.cpp's default). A mapped file that is truncated or copied over while Sotto
# runs (``cp other.gguf`` over it, a re-download in place) kills the process with SIGBUS at the
# next translation (measured: a live session died mid-sentence, exit 135); read into memory, the
# running session keeps translating and only the next start meets the damaged file.


REPACK_WEIGHTS = False
"""True: later loads repack the weights as the stock llama-cpp-python package does (only for
``bench.translate``'s stock baseline: repacked weights break exact speculative decoding)."""


@contextlib.contextmanager
def _without_weight_repacking():
    """Load weights without llama.cpp's CPU repacking ("extra buffer types"), unless
    :data:`REPACK_WEIGHTS` is set.

    Repacked weights take a different kernel for groups of 4 rows than for single
    rows, which would break the batch invariance speculative decoding relies on.
    ``llama_cpp.Llama`` does not expose the flag, so the default model parameters
    are adjusted while the model loads.
    """
    if REPACK_WEIGHTS:
        yield
        return
    import llama_cpp.llama as llama_module

    with _params_lock:
        module = llama_module.llama_cpp
        original = module.llama_model_default_params

        def params():
            p = original()
            p.use_extra_bufts = False
            return p

        module.llama_model_default_params = params
        try:
            yield
        finally:
            module.llama_model_default_params = original


# Room a model needs beyond its weights before llama.cpp can fail cleanly. Short of memory,
# llama.cpp returns an error for a big buffer it cannot get, but aborts the whole process
# (GGML_ASSERT in ggml_init) when a small allocation fails just after the weights were allocated:
# measured with Gemma 3 270M under RLIMIT_AS, a window from about 280 to 310 MB of room above
# the other libraries, where `sotto caption` died with SIGABRT. Reserving the weights plus this
# margin first (address space only, nothing touched) turns that window into a clean error.
LOAD_MARGIN = 128 << 20


def _reserve(size: int) -> None:
    """Raise MemoryError unless ``size`` bytes of memory can be reserved now (and let go at once)."""
    import mmap

    try:
        mmap.mmap(-1, size).close()
    except (OSError, OverflowError, ValueError) as exc:
        raise MemoryError(f"cannot reserve {size} bytes of memory ({exc})") from exc


def generation_threads(cores: int | None = None) -> int:
    """Threads for one-token decoding calls (``n_threads``; calls of several tokens use every core),
    before :func:`faster_threads` measures this machine.

    Decoding one token is bound by memory, not arithmetic: on many CPUs a second thread barely
    speeds it up but nearly doubles its CPU, so half the cores decode at nearly the same speed for
    half the CPU (which the speech engine needs). The logits are the same bit for bit (each row of
    a matrix product is computed whole by one thread). A prompt or verification call of many tokens
    still gains from a second thread."""
    cores = cores or os.cpu_count() or 1
    return max(1, cores // 2)


# One-token decoding moves to every core where that makes a step at least this much faster: its CPU
# per token then rises by at most 2 / 1.5 = 1.33x, while the step, which holds the compute gate
# (speech waits for it, so the other cores idle meanwhile), takes a third less time.
THREADS_SPEEDUP = 1.5
THREADS_PROBE_STEPS = 6  # timed one-token steps per thread count (after one untimed), median taken


def faster_threads(step_seconds: dict[int, float], fewer: int, more: int) -> int:
    """The thread count one-token decoding uses: ``more`` where its step (median seconds, from
    ``step_seconds``) is at least :data:`THREADS_SPEEDUP` times as fast as with ``fewer``, else
    ``fewer``. How much a second thread helps a memory-bound step differs from one CPU to another
    (docs/BENCHMARKS.md, "Threads that wait"), so it is measured, not assumed."""
    slow, fast = step_seconds.get(fewer), step_seconds.get(more)
    if more <= fewer or not slow or not fast:
        return fewer
    return more if slow / fast >= THREADS_SPEEDUP else fewer


@dataclass
class CallStats:
    """Model calls of one kind: how many, the tokens they evaluated, the logit rows they returned and
    their wall seconds."""

    calls: int = 0
    tokens: int = 0
    rows: int = 0
    seconds: float = 0.0


class CallLog:
    """Where a translator's model time goes (``sotto bench translate --profile``): every
    :meth:`LlamaRunner.eval` call, by ``phase`` (set by the translator: "finished" or "unfinished"
    for the update the call serves; a clause piece finished while its sentence still grows counts
    under "unfinished", though it is decoded exactly) and kind: ``one-token`` (greedy decoding),
    ``verification`` (a draft's logit rows) or ``prompt`` (tokens evaluated for the last one's
    logits: a prompt, a kept draft)."""

    def __init__(self) -> None:
        self.phase = ""
        self.stats: dict[tuple[str, str], CallStats] = defaultdict(CallStats)

    @staticmethod
    def kind(tokens: int, rows: int) -> str:
        return "one-token" if tokens == 1 else ("verification" if rows > 1 else "prompt")

    def add(self, tokens: int, rows: int, seconds: float) -> None:
        stats = self.stats[(self.phase, self.kind(tokens, rows))]
        stats.calls += 1
        stats.tokens += tokens
        stats.rows += rows
        stats.seconds += seconds


class LlamaRunner:
    """One model, one context, one sequence; not thread-safe (one owner thread)."""

    def __init__(self, model_path: str | Path, n_ctx: int = 2048, n_threads: int = 0, n_gpu_layers: int = 0) -> None:
        from llama_cpp import Llama

        _route_native_log()
        path = Path(model_path)
        if not path.exists():
            raise ModelError(f"The translation model file {path} does not exist.")
        global _load_messages
        details: tuple[str, ...] = ()
        try:
            _reserve(path.stat().st_size + LOAD_MARGIN)
            with _without_weight_repacking():
                _load_messages = []
                try:
                    self.llm = Llama(
                        model_path=str(path),
                        n_ctx=n_ctx,
                        n_batch=512,
                        n_threads=n_threads or generation_threads(),
                        n_threads_batch=n_threads or max(1, os.cpu_count() or 1),
                        n_gpu_layers=n_gpu_layers,
                        logits_all=False,
                        use_mmap=False,  # read into memory: see "Loading" above
                        verbose=False,
                    )
                finally:
                    details, _load_messages = tuple(_load_messages), None
        except (ValueError, RuntimeError, OSError, MemoryError) as exc:
            # llama.cpp says why only in its log ("insufficient memory", "failed to allocate buffer")
            from ..models.store import load_failure

            logger.exception("loading GGUF %s failed", path)
            raise load_failure(path, "gguf", exc, details) from exc
        self.path = path
        self.n_ctx = self.llm.n_ctx()
        self.n_vocab = self.llm.n_vocab()
        self.tokens: list[int] = []  # tokens whose keys/values are in the cache
        self._blocked = 0  # cached positions [0, _blocked) were computed as complete prompt chunks
        self.eos = self.llm.token_eos()
        self.bos = self.llm.token_bos()
        self.metadata = dict(self.llm.metadata or {})
        self._stops: dict[int, bool] = {}  # is_stop's answers, per token
        self._pieces: dict[int, str] = {}  # piece_of's answers, per token
        self.evaluated = 0  # tokens run through the model since load (for metrics)
        self.log: CallLog | None = None  # set: every eval call is recorded there
        self.interrupt = threading.Event()  # set from another thread: the next eval call stops
        self.gpu_offload = n_gpu_layers != 0 and self._supports_gpu_offload()
        cores = max(1, os.cpu_count() or 1)
        self.generation_threads = n_threads or generation_threads(cores)
        self.thread_steps: dict[int, float] = {}  # threads → a one-token step's median seconds (measured at load)
        if not n_threads and not self.gpu_offload and cores > self.generation_threads:
            self.thread_steps = self.time_steps((self.generation_threads, cores))
            chosen = faster_threads(self.thread_steps, self.generation_threads, cores)
            logger.info("llama.cpp one-token decoding: %s; decoding with %d thread(s)", ", ".join(
                f"{n} thread(s) {1000 * s:.1f} ms a step" for n, s in self.thread_steps.items()), chosen)
            if chosen != self.generation_threads:
                self.set_threads(chosen)
        t0 = time.perf_counter()
        self.batch_invariant, diff = self.batch_matches_single(BATCH_CHECK_TOKENS, SMALL_CHUNK)
        self.batch_check_seconds = time.perf_counter() - t0
        backend = "GPU offload" if self.gpu_offload else "CPU"
        if self.batch_invariant:
            logger.info("llama.cpp (%s): a %d-token verification call gives one-token decoding's logits "
                        "bit for bit: β = 0 is exactly greedy here (checked in %.0f ms)",
                        backend, BATCH_CHECK_TOKENS, 1000 * self.batch_check_seconds)
        else:
            logger.warning("llama.cpp (%s): a %d-token verification call differs from one-token decoding "
                           "(logits up to %.3g apart): β = 0 is greedy except where two tokens nearly tie",
                           backend, BATCH_CHECK_TOKENS, diff)

    def set_threads(self, n: int) -> None:
        """Decode one-token calls on ``n`` threads (calls of several tokens keep every core)."""
        import llama_cpp

        llama_cpp.llama_set_n_threads(self.llm._ctx.ctx, n, max(1, os.cpu_count() or 1))
        self.generation_threads = n

    def time_steps(self, counts: tuple[int, ...]) -> dict[int, float]:
        """The median seconds of a one-token decoding step with each thread count in ``counts``
        (:data:`THREADS_PROBE_STEPS` steps after one untimed, on a short prompt; run at load, on an
        empty cache, which it leaves empty). Ends with the first count set."""
        probe = self.tokenize(" The weather is nice today.", add_bos=True)
        probe = ([self.bos] if self.bos >= 0 and probe[0] != self.bos else []) + probe
        steps: dict[int, float] = {}
        try:
            for n in counts:
                self.set_threads(n)
                self.truncate(0)
                self.eval(probe)
                times = []
                for i in range(THREADS_PROBE_STEPS + 1):
                    t0 = time.perf_counter()
                    self.eval(probe[-1:])
                    if i:
                        times.append(time.perf_counter() - t0)
                steps[n] = float(np.median(times))
        finally:
            self.truncate(0)
            self.evaluated = 0
            self.set_threads(counts[0])
        return steps

    @staticmethod
    def _supports_gpu_offload() -> bool:
        try:
            import llama_cpp

            return bool(llama_cpp.llama_supports_gpu_offload())
        except Exception:
            return False

    def batch_matches_single(self, n: int, chunk: int | None) -> tuple[bool, float]:
        """Whether evaluating ``n`` tokens in calls of at most ``chunk`` gives bit-identical logits
        to evaluating them one at a time (after a BOS), and the largest difference. Leaves the
        cache empty; run on an empty cache (at load)."""
        probe = self.tokenize(" The weather is nice today, so we went out for a long walk", add_bos=True)
        probe = ([self.bos] if self.bos >= 0 and probe[0] != self.bos else []) + probe
        probe = probe[: n + 1]
        try:
            self.eval(probe[:1])
            single = np.stack([self.eval([t]) for t in probe[1:]])
            self.truncate(1)
            batched = self.eval(probe[1:], logits_from=0, chunk=chunk)
        finally:
            self.truncate(0)
            self.evaluated = 0
        return bool(np.array_equal(single, batched)), float(np.abs(single - batched).max())

    def special_token_texts(self) -> tuple[str, str]:
        """The text of the end-of-sequence and beginning-of-sequence tokens ("" if the model has no BOS)."""
        model = self.llm._model
        bos = model.token_get_text(self.bos) if self.bos >= 0 else ""
        return model.token_get_text(self.eos), bos

    def tokenize(self, text: str, add_bos: bool = False) -> list[int]:
        """Tokens of ``text`` (special tokens in the text are parsed)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)

    def detokenize(self, tokens: list[int]) -> str:
        """Text of ``tokens``; incomplete UTF-8 at the end is dropped."""
        return self.llm.detokenize(tokens).decode("utf-8", errors="ignore")

    def exact_reuse(self, n: int) -> int:
        """The longest cached prefix (≤ n tokens) whose reuse keeps results bit-identical:
        whole prompt chunks (see :data:`PROMPT_CHUNK`) only."""
        n = min(n, self._blocked)
        return n - n % PROMPT_CHUNK

    def truncate(self, n: int) -> None:
        """Keep only the first ``n`` cached tokens (roll the KV cache back)."""
        if n < len(self.tokens):
            self.llm._ctx.kv_cache_seq_rm(-1, n, -1)
            del self.tokens[n:]
        self._blocked = min(self._blocked, n)

    def eval(self, tokens: list[int], logits_from: int | None = None, chunk: int | None = None) -> np.ndarray:
        """Append ``tokens`` to the cache and return logits.

        By default the logits of the last token, shape ``(n_vocab,)``. With
        ``logits_from=i``, the logits of ``tokens[i:]``, shape
        ``(len(tokens) - i, n_vocab)``: only those rows are computed and copied,
        which matters with large vocabularies (Gemma 3: 262k). ``chunk`` caps the
        tokens per decode call (see :data:`SMALL_CHUNK`).
        """
        if not tokens:
            raise ValueError("nothing to evaluate")
        if len(self.tokens) + len(tokens) > self.n_ctx:
            raise ModelError(f"The translation context is full ({self.n_ctx} tokens).")
        llm = self.llm
        n_batch = min(llm.n_batch, chunk or llm.n_batch)
        want_from = len(tokens) - 1 if logits_from is None else logits_from
        t0 = time.perf_counter()
        rows: list[np.ndarray] = []
        for i in range(0, len(tokens), n_batch):
            if self.interrupt.is_set():  # between decode calls, so the cache and token list agree
                raise Interrupted("Translation was stopped.")
            batch = tokens[i:i + n_batch]
            llm._batch.set_batch(batch=batch, n_past=len(self.tokens), logits_all=False)
            flags = llm._batch.batch.logits
            n_out = 0
            for j in range(len(batch)):
                wanted = i + j >= want_from
                flags[j] = wanted
                n_out += wanted
            llm._ctx.decode(llm._batch)
            start = len(self.tokens)
            if start == self._blocked and len(batch) == PROMPT_CHUNK and chunk == PROMPT_CHUNK:
                self._blocked = start + PROMPT_CHUNK
            self.tokens.extend(batch)
            self.evaluated += len(batch)
            if n_out:
                rows.append(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_out, self.n_vocab)).copy())
        out = np.concatenate(rows, axis=0)
        if self.log is not None:
            self.log.add(len(tokens), len(out), time.perf_counter() - t0)
        return out[-1] if logits_from is None else out

    def piece_of(self, token: int) -> str:
        """The token's text as it is written, leading space included (a byte of a longer character
        gives "")."""
        piece = self._pieces.get(token)
        if piece is None:
            raw = self.llm._model.token_to_piece(token, special=False)  # a fixed-size buffer, NUL-padded
            piece = raw.split(b"\0", 1)[0].decode("utf-8", errors="ignore")
            self._pieces[token] = piece
        return piece

    def word_of(self, token: int) -> str:
        """The token's text, stripped and in lower case, when it holds a letter; "" otherwise
        (punctuation, digits, spaces: a run of those is no loop, "!!!", "1000")."""
        text = self.piece_of(token)
        return text.strip().lower() if any(ch.isalpha() for ch in text) else ""

    def is_stop(self, token: int) -> bool:
        """End of generation: end-of-sequence, end-of-turn, any other control token or a newline.

        A translation never contains a control token: a model that writes one (a chat
        template's ``<start_of_turn>`` or ``<|im_start|>``, ``<bos>``, ``<pad>``) has left
        its answer, and detokenizing would drop the token but keep what follows ("user").
        """
        stop = self._stops.get(token)
        if stop is None:
            import llama_cpp

            vocab = self.llm._model.vocab
            stop = bool(
                token == self.eos
                or llama_cpp.llama_vocab_is_eog(vocab, token)
                or llama_cpp.llama_vocab_is_control(vocab, token)
                or b"\n" in self.llm._model.token_to_piece(token, special=False)
            )
            self._stops[token] = stop
        return stop

    def close(self) -> None:
        """Free the model and context."""
        try:
            self.llm.close()
        except Exception:
            logger.debug("closing llama failed", exc_info=True)
