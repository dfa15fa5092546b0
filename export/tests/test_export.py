import json
import os

import numpy as np
import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from safetensors import safe_open  # noqa: E402

from hloserve_export import (  # noqa: E402
    ExportError,
    export_jax,
    read_safetensors,
    verify_bundle,
    write_safetensors,
)
from hloserve_export.bundle import load_manifest  # noqa: E402
from hloserve_export.core import check_signature  # noqa: E402
from hloserve_export.mlir import (  # noqa: E402
    PORTABLE_MAGIC,
    TensorType,
    artifact_version,
    main_signature,
    run_module,
)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def tiny_params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "dense_0": {
            "kernel": rng.standard_normal((6, 5)).astype(np.float32),
            "bias": rng.standard_normal((5,)).astype(np.float32),
        },
        "dense_1": {
            "kernel": rng.standard_normal((5, 3)).astype(np.float32),
            "bias": rng.standard_normal((3,)).astype(np.float32),
        },
    }


def tiny_apply(p, x):
    h = jnp.tanh(x @ p["dense_0"]["kernel"] + p["dense_0"]["bias"])
    return h @ p["dense_1"]["kernel"] + p["dense_1"]["bias"]


@pytest.fixture(scope="module")
def tiny_bundle(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("repo") / "tiny")
    res = export_jax(
        tiny_apply,
        tiny_params(),
        [jax.ShapeDtypeStruct((1, 6), jnp.float32)],
        [4, 1, 2],
        out,
        "tiny",
        input_specs=[("x", "fn")],
        output_specs=[("logits", "kn")],
        description="tiny test model",
        command="pytest",
    )
    return out, res


def test_files_and_manifest(tiny_bundle):
    out, res = tiny_bundle
    assert sorted(os.listdir(out)) == [
        "manifest.yaml",
        "model.b1.mlir",
        "model.b2.mlir",
        "model.b4.mlir",
        "reference.safetensors",
        "weights.safetensors",
    ]
    text = open(os.path.join(out, "manifest.yaml")).read()
    assert "format_version: '2.0'" in text or 'format_version: "2.0"' in text
    m = load_manifest(os.path.join(out, "manifest.yaml"))
    assert m["format_version"] == "2.0"
    assert m["name"] == "tiny"
    assert m["kind"] == "model"
    assert m["executable_inputs"] == [{"name": "x", "dtype": "f32", "shape": "fn", "dims": {"f": 6}}]
    assert m["executable_outputs"] == [
        {"name": "logits", "dtype": "f32", "shape": "kn", "dims": {"k": 3}}
    ]
    assert m["batching"] == {"compiled_batch_sizes": [1, 2, 4]}
    prov = m["provenance"]
    assert prov["versions"]["jax"] == jax.__version__
    assert prov["command"] == "pytest"
    assert prov["exported_at"]
    assert prov["num_parameters"] == 6 * 5 + 5 + 5 * 3 + 3 == res.num_parameters


def test_weights_argument_order(tiny_bundle):
    out, res = tiny_bundle
    with safe_open(os.path.join(out, "weights.safetensors"), "np") as f:
        order = json.loads(f.metadata()["argument_order"])
        assert order == ["dense_0.bias", "dense_0.kernel", "dense_1.bias", "dense_1.kernel"]
        assert sorted(f.keys()) == sorted(order)
        p = tiny_params()
        np.testing.assert_array_equal(f.get_tensor("dense_0.kernel"), p["dense_0"]["kernel"])
        assert f.get_tensor("dense_1.kernel").shape == (5, 3)


def test_module_arity_and_types(tiny_bundle):
    out, _ = tiny_bundle
    for b in (1, 2, 4):
        blob = open(os.path.join(out, f"model.b{b}.mlir"), "rb").read()
        assert blob.startswith(PORTABLE_MAGIC)
        assert artifact_version(blob) == "1.15.0"
        assert b"site-packages" not in blob and b".py" not in blob  # locations stripped
        sig = main_signature(blob)
        # (inputs..., weights...) in argument_order
        assert [t.shape for t in sig.inputs] == [(b, 6), (5,), (6, 5), (3,), (5, 3)]
        assert all(t.dtype == "f32" for t in sig.inputs)
        assert [str(t) for t in sig.outputs] == [f"tensor<{b}x3xf32>"]


def test_reference_round_trip(tiny_bundle):
    out, res = tiny_bundle
    ref, meta = read_safetensors(os.path.join(out, "reference.safetensors"))
    assert meta["batch_size"] == "4" and res.reference_batch_size == 4
    x = ref["input.x"]
    assert x.shape == (4, 6) and x.dtype == np.float32
    with jax.default_matmul_precision("highest"):
        want = np.asarray(tiny_apply(tiny_params(), x))
    np.testing.assert_allclose(ref["output.logits"], want, rtol=1e-5, atol=1e-5)
    # the module bytes themselves, with weights in argument_order
    w, wmeta = read_safetensors(os.path.join(out, "weights.safetensors"))
    args = [x] + [w[n] for n in json.loads(wmeta["argument_order"])]
    got = run_module(open(os.path.join(out, "model.b4.mlir"), "rb").read(), args)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-5)
    rep = verify_bundle(out)
    assert rep.reference_batch_size == 4 and rep.num_weights == 4


def test_verify_detects_bad_reference(tiny_bundle, tmp_path):
    out, _ = tiny_bundle
    bad = tmp_path / "tiny"
    bad.mkdir()
    for f in os.listdir(out):
        (bad / f).write_bytes(open(os.path.join(out, f), "rb").read())
    ref, meta = read_safetensors(str(bad / "reference.safetensors"))
    write_safetensors(
        str(bad / "reference.safetensors"),
        [("input.x", ref["input.x"]), ("output.logits", ref["output.logits"] + 0.1)],
        meta,
    )
    with pytest.raises(ExportError, match="differs"):
        verify_bundle(str(bad))
    os.remove(bad / "model.b2.mlir")
    with pytest.raises(ExportError, match="missing"):
        verify_bundle(str(bad))


def test_image_letters_dict_outputs_and_unused_weight(tmp_path):
    """NHWC input -> cwhn; two inputs; dict outputs ordered by output_specs; an unused weight
    is kept as an argument (jit would drop it without keep_unused)."""
    params = {"w": np.ones((3, 2), np.float32), "unused": np.zeros((7,), np.float32)}

    def fn(p, image, scale):
        pooled = image.mean(axis=(1, 2)) @ p["w"]  # [N, 2]
        return {"pooled": pooled * scale, "image2": image * 2.0}

    res = export_jax(
        fn,
        params,
        [jax.ShapeDtypeStruct((1, 8, 4, 3), jnp.float32), jax.ShapeDtypeStruct((1, 1), jnp.float32)],
        [2],
        str(tmp_path / "img"),
        "img",
        input_specs=[("image", "cwhn"), ("scale", "fn")],
        output_specs=[("pooled", "kn"), ("image2", "cwhn")],
    )
    m = load_manifest(str(tmp_path / "img" / "manifest.yaml"))
    assert m["executable_inputs"][0] == {
        "name": "image", "dtype": "f32", "shape": "cwhn", "dims": {"c": 3, "w": 4, "h": 8},
    }  # fmt: skip
    assert [o["name"] for o in m["executable_outputs"]] == ["pooled", "image2"]
    sig = main_signature(open(tmp_path / "img" / "model.b2.mlir", "rb").read())
    assert [t.shape for t in sig.inputs] == [(2, 8, 4, 3), (2, 1), (7,), (3, 2)]
    assert [t.shape for t in sig.outputs] == [(2, 2), (2, 8, 4, 3)]
    assert res.weight_names == ["unused", "w"]
    verify_bundle(str(tmp_path / "img"))


def test_rejects_bad_specs(tmp_path):
    spec = [jax.ShapeDtypeStruct((1, 6), jnp.float32)]
    with pytest.raises(ValueError, match="rank"):
        export_jax(tiny_apply, tiny_params(), spec, [1], str(tmp_path / "a"), "a", ["x"], [("y", "cwhn")])
    with pytest.raises(ExportError, match="batch letter"):
        export_jax(tiny_apply, tiny_params(), spec, [1], str(tmp_path / "a"), "a", [("x", "fk")])
    with pytest.raises(ExportError, match="expected"):  # output batch axis on the wrong side
        export_jax(tiny_apply, tiny_params(), spec, [2], str(tmp_path / "a"), "a", ["x"], [("y", "nk")])


def test_check_signature_arity():
    t = TensorType((2, 3), "f32")
    with pytest.raises(ExportError, match="takes 3 arguments, expected 2"):
        check_signature(type("S", (), {"inputs": [t, t, t], "outputs": [t]})(), [t, t], [t], "x")


def test_safetensors_bf16_round_trip(tmp_path):
    import ml_dtypes

    a = np.arange(6, dtype=np.float32).reshape(2, 3).astype(ml_dtypes.bfloat16)
    b = np.arange(4, dtype=np.int64)
    p = str(tmp_path / "t.safetensors")
    write_safetensors(p, [("a", a), ("b", b)], {"k": "v"})
    got, meta = read_safetensors(p)
    assert meta == {"k": "v"}
    assert got["a"].dtype == a.dtype and np.array_equal(got["a"], a)
    assert np.array_equal(got["b"], b)
    with safe_open(p, "np") as f:
        assert f.metadata() == {"k": "v"} and np.array_equal(f.get_tensor("b"), b)


def test_cli_mlp(tmp_path, capsys):
    from hloserve_export.__main__ import main

    assert main(["mlp", "--out", str(tmp_path), "--batch-sizes", "1,2"]) == 0
    m = load_manifest(str(tmp_path / "mlp" / "manifest.yaml"))
    assert m["batching"]["compiled_batch_sizes"] == [1, 2]
    assert m["provenance"]["command"] == f"python -m hloserve_export mlp --out {tmp_path} --batch-sizes 1,2"
    assert main(["verify", str(tmp_path / "mlp")]) == 0
    assert "reproduced" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["mlp", "resnet", "fno"])
def test_committed_example_bundles(name):
    path = os.path.join(REPO, "examples", "models", name)
    if not os.path.isdir(path):
        pytest.skip(f"{path} not present")
    assert os.path.getsize(os.path.join(path, "weights.safetensors")) < 4.8e6
    rep = verify_bundle(path)
    assert rep.reference_batch_size is not None


def test_hook_rules_in_numpy_match_their_definitions():
    """The numpy twins of the example hooks, which wrote the committed client references."""
    from hloserve_export.examples import classify_image, grader

    logits = np.array([[3.0, 1.0, -2.0, 0.5], [-1.0, 2.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0]], np.float32)
    grades, probs = grader.grade(logits)
    # Early break: the second row fails its first threshold, so its later passes do not count.
    assert grades.tolist() == [2, 0, 4]
    assert np.allclose(probs, 1 / (1 + np.exp(-logits)))
    labels, scores = classify_image.top3(np.array([[0, 0, 5, 1, 0, 0, 0, 0, 0, 3]], np.float32))
    assert labels == [b"bird", b"truck", b"cat"]
    e = np.exp([5.0, 3.0, 1.0]) / (np.exp(5) + np.exp(3) + np.exp(1) + 7)
    assert np.allclose(scores[0], e, rtol=1e-5)


def test_encode_png_is_a_valid_png():
    import struct
    import zlib

    from hloserve_export.examples.classify_image import encode_png

    px = np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3)
    png = encode_png(px)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert (w, h, depth, colour) == (4, 4, 8, 2)
    idat_len = struct.unpack(">I", png[33:37])[0]
    raw = zlib.decompress(png[41 : 41 + idat_len])
    assert raw == b"".join(b"\0" + px[y].tobytes() for y in range(4))
