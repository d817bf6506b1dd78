"""The whole compatibility matrix (compat/*.toml): well formed, cited, consistent, matching
the real nvidia-smi outputs, and answering `gpucheck compat` questions row by row."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from conftest import SHARED_NVSMI, run_gpucheck
from packaging.version import Version

from gpucheck.compat import TOPICS, Compat, CompatError, data_dir, driver_text, load
from gpucheck.compat import answers as ask
from gpucheck.compat.frameworks import cuda_of_local_tag

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

RAW = {name: tomllib.loads((data_dir() / name).read_text(encoding="utf-8")) for name in TOPICS}
COMPAT = load()


def _rows(name: str, table: str) -> list[dict[str, object]]:
    rows = RAW[name][table]
    assert isinstance(rows, list) and rows
    return rows


# -- every file: valid, dated, every row cited ------------------------------------------------


@pytest.mark.parametrize("name", TOPICS)
def test_every_file_loads_is_dated_and_every_row_cites_a_url(name: str) -> None:
    data = RAW[name]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(data["data_as_of"]))
    tables = {k: v for k, v in data.items() if isinstance(v, list)}
    assert tables
    for table, rows in tables.items():
        for row in rows:
            assert re.search(r"https://\S+", str(row.get("source", ""))), (name, table, row)


def test_every_topic_is_readable_through_the_interface() -> None:
    assert len(COMPAT.gpus.models) == len(_rows("gpus.toml", "gpu"))
    assert len(COMPAT.cudnn.releases) == len(_rows("cudnn.toml", "release"))
    assert len(COMPAT.torch.releases) == len(_rows("torch.toml", "release"))
    assert len(COMPAT.torch.archs) == len(_rows("torch.toml", "arch"))
    assert len(COMPAT.tensorflow.releases) == len(_rows("tensorflow.toml", "release"))
    assert len(COMPAT.jax.releases) == len(_rows("jax.toml", "release"))
    assert len(COMPAT.extensions.pairings) == len(_rows("extensions.toml", "pairing"))
    assert len(COMPAT.extensions.numpy) == len(_rows("extensions.toml", "numpy_abi"))
    assert len(COMPAT.tensorrt.releases) == len(_rows("tensorrt.toml", "release"))


def test_torch_extension_pairings_answer_from_the_rows() -> None:
    data = COMPAT.extensions
    # Every pairing row is found again for the torch it names, and back from its versions.
    for row in data.pairings:
        torch = row.torch if row.torch.count(".") == 2 else row.torch + ".0"
        assert data.pairing(row.package, torch) == row, row
        assert data.torch_for(row.package, row.versions[0] + ".0") is not None
    # An exact release wins over its line; torchaudio 2.11's stable ABI covers later torch.
    audio = data.pairing("torchaudio", "2.7.1+cu126")
    assert audio is not None and audio.versions == ("2.7.1",)
    later = data.pairing("torchaudio", "2.14.0")
    assert later is not None and later.torch == "2.11" and later.and_later
    tv = data.pairing("torchvision", "2.10.0")  # from torchvision 0.25.0's own pin
    assert tv is not None and tv.versions == ("0.25",)
    # No torchvision was published for torch 2.15 when the data was read: pins only.
    assert data.pairing("torchvision", "2.15.0") is None


def test_tensorrt_rows_ascend_and_their_gpu_ranges_only_narrow_at_the_bottom() -> None:
    rows = COMPAT.tensorrt.releases
    assert [r.version for r in rows] == sorted(r.version for r in rows)
    floors = [r.min_cc for r in rows if r.min_cc is not None]
    assert floors == sorted(floors)  # a release never supports an older GPU than the one before
    row = COMPAT.tensorrt.release("10.9.0.34")
    assert row is not None and str(row.version) == "10.8.0" and str(row.max_cc) == "12.0"
    assert COMPAT.tensorrt.release("8.0.1") is None
    assert str(COMPAT.tensorrt.tf_without_trt) == "2.18.0"


# -- invariants that catch typos ---------------------------------------------------------------


def test_release_lines_are_unique_and_python_ranges_ordered() -> None:
    for name, table in (("torch.toml", "release"), ("tensorflow.toml", "release")):
        versions = [str(r["version"]) for r in _rows(name, table)]
        assert len(versions) == len(set(versions)), name
        for row in _rows(name, table):
            lo, hi = row.get("python_min"), row.get("python_max")
            if lo and hi:
                assert Version(str(lo)) <= Version(str(hi)), row


def test_reach_of_the_newest_data() -> None:
    assert max(r.version for r in COMPAT.tensorflow.releases) >= Version("2.21")
    assert max(r.version for r in COMPAT.torch.releases) >= Version("2.13")
    assert min(r.version for r in COMPAT.tensorflow.releases) <= Version("1.12")
    assert min(r.version for r in COMPAT.torch.releases) <= Version("1.8")


def test_torch_arch_rows_belong_to_published_variants() -> None:
    for arch in COMPAT.torch.archs:
        covered = [
            r
            for r in COMPAT.torch.releases
            if arch.torch_min <= r.version
            and (arch.torch_max is None or r.version <= arch.torch_max)
        ]
        assert covered, arch
        assert any(arch.cuda in r.cuda_variants for r in covered), arch
        for cc in (*arch.sm, *arch.ptx):
            assert COMPAT.architecture(cc), (arch, cc)


def test_every_gpu_names_a_known_architecture_for_its_cc() -> None:
    for model in COMPAT.gpus.models:
        assert COMPAT.architecture(model.compute_capability) == model.architecture, model.name
        assert model.segment in {"datacenter", "workstation", "geforce", "jetson"}


def test_tensorflow_cuda_is_a_known_cuda_release() -> None:
    majors = {t.version.major for t in COMPAT.toolkits}
    for rel in COMPAT.tensorflow.releases:
        assert rel.cuda is not None and Version(rel.cuda).major in majors, rel


def test_cudnn_rows_cover_their_own_version() -> None:
    for rel in COMPAT.cudnn.releases:
        # Covers are as the matrix names them ("8.0.0 Preview").
        assert not rel.covers or any(c.split()[0] == str(rel.version) for c in rel.covers), rel


# -- the real nvidia-smi outputs: every GPU name resolves, to the right compute capability ----------


def _xml_names() -> list[tuple[str, str | None]]:
    out = []
    for path in sorted((SHARED_NVSMI / "telegraf").glob("*.xml")):
        root = ET.parse(path).getroot()
        for gpu in root.iter("gpu"):
            out.append((gpu.findtext("product_name") or "", gpu.findtext("product_architecture")))
    return out


def _csv_names_and_ccs() -> list[tuple[str, str]]:
    """(name, compute_cap) from the --query-gpu CSV tables in the exporter captures."""
    out = []
    for path in sorted((SHARED_NVSMI / "nvidia_gpu_exporter").glob("*.txt")):
        lines = path.read_text(errors="replace").splitlines()
        for i, line in enumerate(lines):
            header = [h.strip() for h in line.split(",")]
            if "name" in header and "compute_cap" in header and not line.startswith("#"):
                for row in csv.reader(io.StringIO("\n".join(lines[i + 1 : i + 9]))):
                    if len(row) != len(header):
                        break
                    values = dict(zip(header, (v.strip() for v in row), strict=True))
                    out.append((values["name"], values["compute_cap"]))
    return out


def test_names_in_query_outputs_resolve_to_their_reported_compute_capability() -> None:
    pairs = _csv_names_and_ccs()
    assert len({name for name, _ in pairs}) >= 5
    for name, cc in pairs:
        if name == "Some Other GPU":  # the synthetic row of the exporter's test data
            assert COMPAT.gpus.lookup(name) is None
            continue
        model = COMPAT.gpus.lookup(name)
        assert model is not None, name
        assert model.compute_capability == cc, (name, model)


def test_names_in_xml_outputs_resolve_and_agree_on_architecture() -> None:
    names = _xml_names()
    assert len(names) >= 15
    for name, arch in names:
        model = COMPAT.gpus.lookup(name)
        if name == "Graphics Device":  # the driver did not know the board: unknown is right
            assert model is None
            continue
        assert model is not None, name
        if arch and arch != "N/A":
            assert model.architecture.split()[0] == arch.split()[0], (name, arch, model)


@pytest.mark.parametrize(
    ("nvml_name", "cc"),
    [
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("NVIDIA A100-PCIE-40GB", "8.0"),
        ("NVIDIA A100 80GB PCIe", "8.0"),
        ("NVIDIA H100 PCIe", "9.0"),
        ("NVIDIA H100 NVL", "9.0"),
        ("Tesla K80", "3.7"),
        ("NVIDIA GeForce RTX 4090", "8.9"),
    ],
)
def test_nvml_spellings_are_matched(nvml_name: str, cc: str) -> None:
    model = COMPAT.gpus.lookup(nvml_name)
    assert model is not None and model.compute_capability == cc


def test_unknown_gpu_is_unknown_not_a_neighbour() -> None:
    assert COMPAT.gpus.lookup("NVIDIA GeForce GTX 1660 Ti") is None  # not in NVIDIA's list
    assert COMPAT.gpus.lookup("") is None
    assert "GeForce GTX 1650 Ti" in COMPAT.gpus.suggestions("NVIDIA GeForce GTX 1660 Ti")


# -- the answers, row by row ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "row", _rows("tensorflow.toml", "release"), ids=lambda r: str(r["version"])
)
def test_tensorflow_answers_its_row(row: dict[str, object]) -> None:
    data = ask.tensorflow(COMPAT, str(row["version"])).to_dict()
    assert (data["cuda"], data["cudnn"]) == (row["cuda"], row["cudnn"])
    assert (data["python_min"], data["python_max"]) == (row["python_min"], row["python_max"])
    assert str(row["source"]) in data["sources"]
    assert data["windows_native_gpu"] == (Version(str(row["version"])) <= Version("2.10"))


@pytest.mark.parametrize("row", _rows("torch.toml", "release"), ids=lambda r: str(r["version"]))
def test_torch_answers_its_row(row: dict[str, object]) -> None:
    data = ask.torch(COMPAT, f"{row['version']}.0").to_dict()
    # A row without variants: not published (unknown, None), not an empty set.
    assert data["cuda_variants"] == (row.get("cuda_variants") or None)
    assert data["python_min"] == row["python_min"] and data["python_max"] == row["python_max"]
    judged = set(data["cuda_variants"] or []) | (
        {row["default_pypi_cuda"]} if row.get("default_pypi_cuda") else set()
    )
    assert set(data["architectures"] or {}) == judged


def test_torch_architectures_come_from_the_arch_rows() -> None:
    for arch in COMPAT.torch.archs:
        data = ask.torch(COMPAT, str(arch.torch_min)).data
        assert data["architectures"].get(arch.cuda) == {"sm": list(arch.sm), "ptx": list(arch.ptx)}


def test_torch_newer_than_the_data_is_answered_by_its_tag_only() -> None:
    data = ask.torch(COMPAT, "9.1.0+cu135").data
    assert (data["known"], data["cuda"]) == (False, "13.5")
    # Same keys as a known release (a script reads them), and nothing guessed: all null.
    assert set(data) == set(ask.torch(COMPAT, "2.5.1").data)
    assert all(v is None for k, v in data.items() if k not in ("version", "known", "cuda"))
    with pytest.raises(CompatError, match="closest known"):
        ask.torch(COMPAT, "9.1.0")
    assert cuda_of_local_tag("2.5.1+cu124") == "12.4"
    assert cuda_of_local_tag("1.13.1+cu117") == "11.7"
    assert cuda_of_local_tag("2.13.0+cpu") is None


@pytest.mark.parametrize(
    "row",
    [r for r in _rows("cuda.toml", "toolkit") if str(r["version"]).endswith(".0")],
    ids=lambda r: str(r["version"]),
)
def test_cuda_answers_its_ga_row(row: dict[str, object]) -> None:
    cuda = ".".join(str(row["version"]).split(".")[:2])
    data = ask.cuda(COMPAT, cuda).data
    linux = str(row["min_driver_linux"]) or str(row.get("driver_branch", ""))
    assert data["min_driver_linux"] == (linux or None)
    assert data["min_driver_windows"] == (str(row["min_driver_windows"]) or None)
    if data["min_compute_capability"] is not None:
        assert Version(data["min_compute_capability"]) <= Version(data["max_compute_capability"])


@pytest.mark.parametrize(
    "row",
    [r for r in _rows("cuda.toml", "toolkit") if r["min_driver_linux"]][::4],
    ids=lambda r: str(r["version"]),
)
def test_a_release_minimum_driver_runs_that_release(row: dict[str, object]) -> None:
    data = ask.driver(COMPAT, str(row["min_driver_linux"])).data
    version = Version(str(row["version"]))
    assert Version(data["max_cuda"]) >= Version(f"{version.major}.{version.minor}")
    torch = data["newest_torch"]
    if torch is not None:
        assert COMPAT.cuda_runs_on_driver(torch["cuda"], str(row["min_driver_linux"]))
        rel = COMPAT.torch.release(torch["version"])
        assert rel is not None
        assert torch["cuda"] in (*rel.cuda_variants, rel.default_pypi_cuda)


def test_driver_answers_use_minor_version_compatibility() -> None:
    data = ask.driver(COMPAT, "535.104.05").data
    assert data["max_cuda"] == "12.2"
    assert 12 in data["minor_compat_majors"]
    assert Version(data["newest_torch"]["cuda"]).major == 12  # a 12.x wheel runs on a 12.2 driver
    old = ask.driver(COMPAT, "470.256.02").data
    assert Version(old["newest_torch"]["cuda"]).major == 11
    assert Version(old["newest_tensorflow"]["cuda"]).major == 11


@pytest.mark.parametrize("row", _rows("gpus.toml", "gpu")[::7], ids=lambda r: str(r["name"]))
def test_gpu_answers_its_row(row: dict[str, object]) -> None:
    data = ask.gpu(COMPAT, str(row["name"])).data
    assert data["compute_capability"] == row["compute_capability"]
    assert data["architecture"] == row["architecture"]
    torch = data["newest_torch"]
    if torch is not None:
        arch = COMPAT.torch.arch(torch["version"], torch["cuda"])
        assert arch is not None and arch.runs_on(str(row["compute_capability"]))


def test_kepler_and_pascal_stop_where_the_data_says() -> None:
    k80 = ask.gpu(COMPAT, "Tesla K80").data
    assert k80["compute_capability"] == "3.7" and k80["newest_cuda"].startswith("11.")
    assert Version(k80["newest_torch"]["cuda"]) < Version("12.0")
    h100 = ask.gpu(COMPAT, "NVIDIA H100 80GB HBM3").data
    assert Version(h100["newest_cuda"]) >= Version("13.0")


# -- the command, and user compat folders ---------------------------------------------------


def test_compat_command_json_keys() -> None:
    tf = json.loads(run_gpucheck("compat", "tensorflow", "2.15", "--json").stdout)
    assert {"cuda", "cudnn", "python_min", "python_max"} <= set(tf)
    torch = json.loads(run_gpucheck("compat", "torch", "2.5.1", "--json").stdout)
    assert {"cuda_variants", "python_min", "python_max", "architectures"} <= set(torch)
    drv = json.loads(run_gpucheck("compat", "driver", "535.104.05", "--json").stdout)
    assert {"max_cuda", "newest_torch", "newest_tensorflow"} <= set(drv)
    cuda = json.loads(run_gpucheck("compat", "cuda", "12.4", "--json").stdout)
    assert {
        "min_driver_linux",
        "min_driver_windows",
        "min_compute_capability",
        "max_compute_capability",
    } <= set(cuda)
    gpu = json.loads(run_gpucheck("compat", "gpu", "Tesla K80", "--json").stdout)
    assert {
        "compute_capability",
        "architecture",
        "newest_cuda",
        "newest_torch",
        "newest_tensorflow",
    } <= set(gpu)
    about = json.loads(run_gpucheck("compat", "--about", "--json").stdout)
    assert set(about["files"]) == set(TOPICS) and about["distinct_sources"] > 50


def test_compat_command_text_and_unknowns() -> None:
    text = run_gpucheck("compat", "cuda", "12.4")
    assert text.returncode == 0
    assert f"min_driver_linux: {driver_text(COMPAT.min_driver('12.4'))}" in text.stdout  # type: ignore[arg-type]
    assert "source: https://" in text.stdout
    for args, needle in (
        (("tensorflow", "2.99"), "closest known: 2.19, 2.20, 2.21"),
        (("gpu", "Radeon RX 7900"), "is not in the compat data"),
        (("driver", "latest"), "is not a driver version"),
    ):
        result = run_gpucheck("compat", *args)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
        assert needle in result.stderr and "Traceback" not in result.stderr


def test_a_user_compat_folder_overrides_and_extends(tmp_path: Path) -> None:
    (tmp_path / "torch.toml").write_text(
        'data_as_of = "2026-11-20"\n'
        "[[release]]\n"
        'version = "2.99"\npython_min = "3.10"\npython_max = "3.13"\ncuda_variants = ["12.8"]\n'
        'source = "https://wiki.internal.example/torch-2.99 (our build)"\n'
        "[[release]]\n"
        'version = "2.5"\npython_min = "3.9"\npython_max = "3.12"\ncuda_variants = ["12.4"]\n'
        'source = "https://wiki.internal.example/torch-2.5 (our rebuild)"\n'
    )
    compat = Compat.from_dir(data_dir(), [tmp_path])
    assert compat.torch.release("2.99") is not None
    assert compat.torch.release("2.5").cuda_variants == ("12.4",)  # type: ignore[union-attr]
    assert len(compat.torch.releases) == len(COMPAT.torch.releases) + 1
    result = run_gpucheck(
        "compat", "torch", "2.99", "--json", env={"GPUCHECK_COMPAT_DIR": str(tmp_path)}
    )
    assert json.loads(result.stdout)["cuda_variants"] == ["12.8"]
    flag = run_gpucheck("compat", "--compat-dir", str(tmp_path), "torch", "2.99")
    assert flag.returncode == 0 and "our build" in flag.stdout


def test_a_broken_user_compat_folder_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "torch.toml").write_text('[[release]]\nversion = "2.99"\n')
    result = run_gpucheck("compat", "--compat-dir", str(tmp_path), "torch", "2.5")
    assert result.returncode == 2 and "every row needs a source" in result.stderr
    (tmp_path / "torch.toml").unlink()
    (tmp_path / "pytorch.toml").write_text("")
    with pytest.raises(CompatError, match=r"unknown compat file pytorch\.toml"):
        Compat.from_dir(data_dir(), [tmp_path])
    missing = run_gpucheck("doctor", "--compat-dir", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such compat folder" in missing.stderr


def test_the_doctor_reads_only_what_its_checks_ask_for() -> None:
    """Start-up must not pay for the whole matrix: the doctor's checks need cuda.toml alone."""
    from support import builders

    from gpucheck import checks

    compat = Compat.from_dir(data_dir())
    checks.run(checks.Context(builders.h100_node(2), _compat=compat))
    assert not {"gpus", "cudnn", "torch", "tensorflow", "jax"} & set(vars(compat))
