"""Word timestamps from the verifier's cross-attention (dynamic time warping).

Whisper's alignment heads (listed in the model's config, carried over from the
CTranslate2 conversion) attend to the audio frames a token was heard in. One
decoder pass over the transcript with attention weights, normalised per frame
and median-filtered, gives a token × frame cost matrix; the cheapest monotonic
path through it (DTW) assigns each token a time, and words take the times of
their first and last tokens. This is the method faster-whisper and Whisper use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .runtime import WhisperRunner, _torch

FRAMES_PER_SECOND = 50  # encoder frames (20 ms each)


@dataclass
class TimedWord:
    """A word with start and end in seconds from the window start."""

    text: str
    start: float
    end: float
    probability: float = 1.0


def _median_filter(x: np.ndarray, width: int) -> np.ndarray:
    """Median filter along the last axis (reflect-padded)."""
    if width <= 1 or x.shape[-1] < width:
        return x
    pad = width // 2
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(pad, pad)], mode="reflect")
    windows = np.lib.stride_tricks.sliding_window_view(padded, width, axis=-1)
    return np.median(windows, axis=-1)


def dtw(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cheapest monotonic path through ``cost`` (tokens × frames): (token indices, frame indices)."""
    n, m = cost.shape
    acc = np.full((n + 1, m + 1), np.inf)
    acc[0, 0] = 0.0
    trace = np.zeros((n + 1, m + 1), dtype=np.int8)
    for i in range(1, n + 1):
        row, prev = acc[i], acc[i - 1]
        for j in range(1, m + 1):
            c0, c1, c2 = prev[j - 1], prev[j], row[j - 1]
            if c0 <= c1 and c0 <= c2:
                best, t = c0, 0
            elif c1 <= c2:
                best, t = c1, 1
            else:
                best, t = c2, 2
            row[j] = cost[i - 1, j - 1] + best
            trace[i, j] = t
    i, j = n, m
    path_i, path_j = [], []
    while i > 0 and j > 0:
        path_i.append(i - 1)
        path_j.append(j - 1)
        t = trace[i, j]
        if t == 0:
            i, j = i - 1, j - 1
        elif t == 1:
            i -= 1
        else:
            j -= 1
    return np.array(path_i[::-1]), np.array(path_j[::-1])


def _words(runner: WhisperRunner, tokens: list[int]) -> list[tuple[str, list[int]]]:
    """Split text tokens into words (a token starting with a space starts a word)."""
    words: list[tuple[str, list[int]]] = []
    for i, token in enumerate(tokens):
        piece = runner.decode_text([token])
        if not words or piece.startswith(" "):
            words.append((piece, [i]))
        else:
            text, idx = words[-1]
            words[-1] = (text + piece, idx + [i])
    return [(runner.decode_text([tokens[i] for i in idx]), idx) for _, idx in words]


def word_timestamps(runner: WhisperRunner, encoder_output, prompt: list[int], tokens: list[int],
                    num_samples: int) -> list[TimedWord]:
    """Words of ``tokens`` (text tokens decoded after ``prompt``) with times, from one attention pass."""
    torch = _torch()
    if not tokens:
        return []
    heads = runner.alignment_heads
    frames = max(1, min(1500, num_samples // 320))
    sequence = prompt + tokens + [runner.special.eot]
    model = runner.model
    with torch.inference_mode():
        model.set_attn_implementation("eager")
        try:
            out = model.model.decoder(input_ids=torch.tensor([sequence], device=runner.device),
                                      encoder_hidden_states=encoder_output, output_attentions=True, use_cache=False)
        finally:
            model.set_attn_implementation("sdpa")
        attentions = out.cross_attentions  # per layer: (1, heads, len(sequence), encoder rows)
        weights = torch.stack([attentions[layer][0, head] for layer, head in heads])  # (H, T, encoder rows ≥ frames)
        weights = weights[:, :, :frames].float()
        logits = runner.logits(out.last_hidden_state[0, len(prompt) - 1:len(prompt) + len(tokens) - 1])
        probs = torch.softmax(logits, dim=-1)
        token_probs = probs[torch.arange(len(tokens), device=probs.device),
                            torch.tensor(tokens, device=probs.device)].cpu().numpy()
    w = weights.cpu().numpy()
    std = w.std(axis=-2, keepdims=True)
    mean = w.mean(axis=-2, keepdims=True)
    w = (w - mean) / np.maximum(std, 1e-8)
    w = _median_filter(w, 7)
    # row i is the query that predicts token i (from the last prompt token on): text tokens, then eot
    matrix = w.mean(axis=0)[len(prompt) - 1:len(prompt) + len(tokens)]
    text_idx, time_idx = dtw(-matrix.astype(np.float64))
    jumps = np.pad(np.diff(text_idx), (1, 0), constant_values=1).astype(bool)
    jump_times = time_idx[jumps] / FRAMES_PER_SECOND  # the time each token (and eot) starts
    result = []
    for text, idx in _words(runner, tokens):
        start = float(jump_times[idx[0]]) if idx[0] < len(jump_times) else float(jump_times[-1])
        end_i = idx[-1] + 1
        end = float(jump_times[end_i]) if end_i < len(jump_times) else frames / FRAMES_PER_SECOND
        result.append(TimedWord(text, start, max(end, start), float(np.mean(token_probs[idx]))))
    return result
