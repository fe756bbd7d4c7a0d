"""Random-weight proxies of the catalogue translators: they have the catalogue model's shape and
quantisation, llama.cpp loads and decodes them, kept ones are reused and damaged ones rebuilt, and the
advice uses the speed stored for this machine."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.models.advice import (
    BUNDLED,
    BY_PROXY,
    BY_SCALING,
    LIVE_TOKENS_PER_S,
    Machine,
    catalogue_sizes,
    estimated_speed,
    proxy_records,
    recommend,
    record_proxy_speeds,
    speed_notes,
    this_machine,
)
from core.translate.proxy import SHAPES, TranslatorShape, Workload, build_proxy, load, measure, time_workload

GB = 1_000_000_000
# the architecture at a width that builds in a second: for what does not depend on the catalogue's shape
TINY = TranslatorShape("tiny-qwen2", 6, 512, 4, 2, 1024, 2048)


@pytest.fixture(scope="module")
def small_proxy(tmp_path_factory):
    """The 1.5B catalogue translator's shape at 2 layers (full width and vocabulary; about 0.25 GB)."""
    return build_proxy(SHAPES["qwen2.5-1.5b-instruct"], 2, tmp_path_factory.mktemp("proxies"))


def test_the_catalogue_translators_have_shapes():
    assert set(SHAPES) == set(catalogue_sizes()) - {BUNDLED}
    # the published parameter counts (Qwen2.5 model cards: 1.54B and 3.09B, the tied embedding counted once)
    assert SHAPES["qwen2.5-1.5b-instruct"].parameters() == pytest.approx(1.54e9, rel=0.01)
    assert SHAPES["qwen2.5-3b-instruct"].parameters() == pytest.approx(3.09e9, rel=0.01)
    # Hy-MT2 1.8B (1.79B), EuroLLM-1.7B (1.657B, its output projection apart), TranslateGemma 4B's text model
    # (Gemma 3 4B's 3.88B without the vision tower)
    assert SHAPES["hy-mt2-1.8b"].parameters() == pytest.approx(1.79e9, rel=0.01)
    assert SHAPES["eurollm-1.7b-instruct"].parameters() == pytest.approx(1.657e9, rel=0.01)
    assert SHAPES["translategemma-4b"].parameters() == pytest.approx(3.88e9, rel=0.01)


@pytest.mark.parametrize("shape", [
    TranslatorShape("tiny-llama", 2, 512, 4, 2, 1024, 2048, tied=False, architecture="llama"),
    TranslatorShape("tiny-hunyuan", 2, 512, 4, 2, 1024, 2048, architecture="hunyuan-dense"),
    TranslatorShape("tiny-gemma3", 2, 512, 4, 2, 1024, 2048, architecture="gemma3", head_dim_=256, sliding_window=64),
], ids=lambda shape: shape.architecture)
def test_each_catalogue_architecture_is_written_as_llama_cpp_reads_it(shape, tmp_path):
    """A proxy in each architecture of the catalogue's translators (narrow, so it builds at once) has the
    tensors its shape names, loads in the bundled llama.cpp and decodes."""
    from gguf import GGUFReader

    path = build_proxy(shape, 2, tmp_path)
    reader = GGUFReader(path)
    assert reader.fields["general.architecture"].contents() == shape.architecture
    tensors = {t.name: tuple(int(d) for d in reversed(t.shape)) for t in reader.tensors}
    assert tensors == shape.tensors(2)
    del reader
    runner = load(path)
    try:
        logits = runner.eval(runner.tokenize("Good morning, everyone."))
        assert logits.shape == (2048,) and np.isfinite(logits).all()
        assert time_workload(runner, Workload(prompt_tokens=20, output_tokens=5)) > 0
    finally:
        runner.close()


def test_proxy_has_the_catalogue_shape_and_quantisation(small_proxy):
    from gguf import GGMLQuantizationType, GGUFReader

    shape = SHAPES["qwen2.5-1.5b-instruct"]
    reader = GGUFReader(small_proxy)

    def value(key):
        return reader.fields[key].contents()

    assert value("general.architecture") == "qwen2"
    assert value("qwen2.block_count") == 2
    assert value("qwen2.embedding_length") == 1536 and value("qwen2.feed_forward_length") == 8960
    assert value("qwen2.attention.head_count") == 12 and value("qwen2.attention.head_count_kv") == 2
    assert len(reader.fields["tokenizer.ggml.tokens"].data) == 151936
    assert value("general.file_type") == 15  # LLAMA_FTYPE_MOSTLY_Q4_K_M
    tensors = {t.name: t for t in reader.tensors}
    assert set(tensors) == set(shape.tensors(2)), "the tensors of a Qwen2 GGUF, no output.weight (tied)"
    for name, dims in shape.tensors(2).items():
        assert tuple(int(d) for d in reversed(tensors[name].shape)) == dims, name  # GGUF lists columns first
    assert tensors["blk.0.attn_k.weight"].shape.tolist() == [1536, 256]
    # as llama.cpp quantises a real model to Q4_K_M: the tied embedding (also the output) in Q6_K, the
    # layers in Q4_K but for attn_v and ffn_down in half of them
    assert tensors["token_embd.weight"].tensor_type == GGMLQuantizationType.Q6_K
    assert tensors["blk.0.ffn_up.weight"].tensor_type == GGMLQuantizationType.Q4_K
    assert {tensors[f"blk.{i}.ffn_down.weight"].tensor_type for i in range(2)} == {
        GGMLQuantizationType.Q4_K, GGMLQuantizationType.Q6_K}


def test_llama_cpp_loads_the_proxy_and_decodes(small_proxy):
    runner = load(small_proxy)
    try:
        assert runner.n_vocab == 151936 and runner.metadata["general.architecture"] == "qwen2"
        logits = runner.eval(runner.tokenize("Good morning, everyone."))
        assert logits.shape == (151936,) and np.isfinite(logits).all()
        assert time_workload(runner, Workload(prompt_tokens=20, output_tokens=5)) > 0
        assert len(runner.tokens) == 0, "the cache is left empty"
    finally:
        runner.close()


def test_proxies_are_kept_and_a_damaged_one_rebuilt(tmp_path):
    messages = []
    first = measure(["tiny-qwen2"], Workload(40, 8), rounds=1, burst=1, root=tmp_path, shapes={"tiny-qwen2": TINY},
                    on_status=lambda message, fraction: messages.append(message))
    assert first[0].model == "tiny-qwen2" and first[0].tokens_per_s > 0 and first[0].layers == 6
    assert any(m.startswith("Building") for m in messages)
    kept = sorted(tmp_path.glob("*.gguf"))
    assert [p.name.split("-l")[-1] for p in kept] == ["2-q4_k_m-p1.gguf", "4-q4_k_m-p1.gguf"]
    sizes = {p: p.stat().st_size for p in kept}
    mtimes = {p: p.stat().st_mtime_ns for p in kept}

    messages.clear()
    measure(["tiny-qwen2"], Workload(40, 8), rounds=1, burst=1, root=tmp_path, shapes={"tiny-qwen2": TINY},
            on_status=lambda message, fraction: messages.append(message))
    assert {p: p.stat().st_mtime_ns for p in kept} == mtimes, "kept proxies are reused"
    assert not any(m.startswith("Building") for m in messages)

    damaged = kept[0]
    damaged.write_bytes(damaged.read_bytes()[: sizes[damaged] // 2])  # a truncated file
    again = measure(["tiny-qwen2"], Workload(40, 8), rounds=1, burst=1, root=tmp_path, shapes={"tiny-qwen2": TINY})
    assert again[0].tokens_per_s > 0
    assert damaged.stat().st_size == sizes[damaged], "built again whole"
    assert sorted(tmp_path.iterdir()) == kept, "no staging or source file is left behind"


def test_full_depth_proxy_is_timed_and_removed(tmp_path):
    (speed,) = measure(["tiny-qwen2"], Workload(40, 8), rounds=1, burst=1, root=tmp_path, shapes={"tiny-qwen2": TINY},
                       full_depth=True)
    assert speed.full_depth_tokens_per_s and speed.full_depth_tokens_per_s > 0
    assert not list(tmp_path.glob("*-l6-*")), "the full-depth proxy is not kept"


def test_unknown_model_is_one_sentence(tmp_path):
    from core.errors import SottoError

    with pytest.raises(SottoError, match=r"^No proxy shape is known for nonesuch; known: .*\.$"):
        measure(["nonesuch"], root=tmp_path)


def test_advice_uses_the_stored_proxy_speed(tmp_path, monkeypatch):
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path))
    assert proxy_records() == {} and this_machine().proxy_tokens_per_s == {}
    record_proxy_speeds({"qwen2.5-1.5b-instruct": {"tokens_per_s": 40.0, "layers": 28}})
    record_proxy_speeds({"qwen2.5-3b-instruct": {"tokens_per_s": 6.0}})  # kept beside the first
    assert this_machine().proxy_tokens_per_s == {"qwen2.5-1.5b-instruct": 40.0, "qwen2.5-3b-instruct": 6.0}
    assert proxy_records()["qwen2.5-1.5b-instruct"]["layers"] == 28

    # the 2-core machine whose bundled model measured 21.5 tokens/s: scaled by size, the 1.5B model would
    # not keep up (3.8 tokens/s); measured with its proxy at 40 it does
    machine = Machine(25 * GB, 2, None, 21.5, this_machine().proxy_tokens_per_s)
    assert estimated_speed("qwen2.5-1.5b-instruct", machine) == (40.0, True)
    advice = recommend(machine, catalogue_sizes())
    assert advice.model == "qwen2.5-1.5b-instruct" and advice.estimated_tokens_per_s == 40.0
    assert BY_PROXY in advice.reason  # the 3B model fits in memory: passed over as too slow
    assert recommend(Machine(25 * GB, 2, None, 21.5), catalogue_sizes()).model == BUNDLED
    notes = speed_notes(machine)
    assert notes["qwen2.5-3b-instruct"] == f"about 6.0 tokens/s here, too slow for live captions ({BY_PROXY})"
    assert notes[BUNDLED] == "about 22 tokens/s here, keeps up (measured)"
    # a slower machine: the bundled model is still the one advised, and its note says what being slow costs
    # rather than calling the advised model too slow
    slow = Machine(25 * GB, 2, None, 9.0)
    assert recommend(slow, catalogue_sizes()).model == BUNDLED
    assert speed_notes(slow)[BUNDLED] == ("about 9.0 tokens/s here, slower than live captions want: finished lines' "
                                          "translations come later (measured)")
    assert BY_SCALING in speed_notes(Machine(25 * GB, 2, None, 21.5))["qwen2.5-1.5b-instruct"]
    assert LIVE_TOKENS_PER_S == 15.0


def test_proxy_speeds_of_another_machine_or_damaged_are_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("SOTTO_DATA_DIR", str(tmp_path))
    record_proxy_speeds({"qwen2.5-1.5b-instruct": {"tokens_per_s": 40.0}})
    path = tmp_path / "translator-proxy-speed.json"
    data = json.loads(path.read_text())
    data["machine"]["cpu"] = "another processor"
    path.write_text(json.dumps(data))
    assert proxy_records() == {}, "measured on another machine"
    record_proxy_speeds({"qwen2.5-3b-instruct": {"tokens_per_s": 6.0}})
    assert set(proxy_records()) == {"qwen2.5-3b-instruct"}, "the other machine's speeds are dropped"
    path.write_text("{not json")
    assert proxy_records() == {}
