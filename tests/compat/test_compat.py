"""The compat data: well formed, every row cited, invariants that catch typos, and the
answers the checks rely on (each spot-checked against the row it comes from)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from gpucheck.compat import Compat, CompatError, data_dir, load

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

DATA = data_dir() / "cuda.toml"
RAW = tomllib.loads(DATA.read_text(encoding="utf-8"))


def test_data_loads_and_has_a_date() -> None:
    compat = load()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", compat.data_as_of)
    assert len(compat.toolkits) >= 50
    assert {9, 10, 11, 12, 13} <= {t.version.major for t in compat.toolkits}


@pytest.mark.parametrize("table", ["toolkit", "minor_compat", "toolkit_arch", "architecture"])
def test_every_row_cites_a_public_source(table: str) -> None:
    rows = RAW[table]
    assert rows
    for row in rows:
        assert re.search(r"https://\S+", row["source"]), row


def test_min_drivers_never_decrease_within_a_major() -> None:
    compat = load()
    for os_name in ("linux", "windows"):
        last: dict[int, Version] = {}
        for t in compat.toolkits:
            need = t.min_driver_linux if os_name == "linux" else t.min_driver_windows
            if need is None:
                continue
            prev = last.get(t.version.major)
            assert prev is None or need >= prev, (os_name, t.version, need, prev)
            last[t.version.major] = need


def test_minor_compat_floor_is_at_most_every_later_release_of_its_major() -> None:
    # Not the x.0 GA: CUDA 11.0 GA shipped with 450.51.05, below 11.x's later floor 450.80.02.
    compat = load()
    for t in compat.toolkits:
        floor = compat.minor_compat_floor(t.version.major)
        if floor is not None and t.min_driver_linux is not None and t.version.minor >= 1:
            assert floor <= t.min_driver_linux, t.version


def test_architecture_ranges_are_consistent() -> None:
    compat = load()
    known = {cc for a in compat.architectures for cc in a.compute_capabilities}
    for row in compat.arch_ranges:
        assert row.min_cc <= row.max_cc
        assert str(row.min_cc) in known and str(row.max_cc) in known, row
    # CUDA 12.0 dropped Kepler; 13.0 dropped Maxwell, Pascal and Volta.
    assert compat.architecture(str(compat.cc_range("12.0").min_cc)) == "Maxwell"  # type: ignore[union-attr]
    assert compat.architecture(str(compat.cc_range("13.0").min_cc)) == "Turing"  # type: ignore[union-attr]
    assert compat.cc_range("11.8").min_cc < Version("5.0")  # type: ignore[union-attr]


def _row(version: str) -> dict[str, str]:
    return next(r for r in RAW["toolkit"] if r["version"] == version)


@pytest.mark.parametrize("cuda", ["10.2", "11.8", "12.2", "12.4", "12.8", "13.0"])
def test_min_driver_is_the_ga_row(cuda: str) -> None:
    assert str(load().min_driver(cuda)) == str(Version(_row(cuda + ".0")["min_driver_linux"]))


def test_max_cuda_for_a_driver_is_the_newest_release_it_meets() -> None:
    compat = load()
    ga_124 = _row("12.4.0")["min_driver_linux"]
    assert str(compat.max_cuda_for_driver(ga_124)) == "12.4"
    # One patch level below 12.4's minimum runs 12.3 at most.
    assert str(compat.max_cuda_for_driver(_row("12.3.0")["min_driver_linux"])) == "12.3"
    assert compat.max_cuda_for_driver("not a version") is None
    assert compat.max_cuda_for_driver("100.1") is None


def test_branch_only_rows_use_the_branch_as_floor() -> None:
    row = _row("13.3.0")
    assert row["min_driver_linux"] == ""
    assert str(load().min_driver("13.3")) == row["driver_branch"]


def test_unknown_versions_are_unknown_not_guessed() -> None:
    compat = load()
    assert compat.min_driver("99.9") is None
    assert compat.release("garbage") is None


def test_malformed_data_is_a_clear_error(tmp_path: Path) -> None:
    shutil.copy(DATA, tmp_path / "cuda.toml")
    text = (tmp_path / "cuda.toml").read_text()
    (tmp_path / "cuda.toml").write_text(
        text.replace('min_driver_linux = "346.46"', 'min_driver_linux = "banana"', 1)
    )
    with pytest.raises(
        CompatError, match=r"cuda.toml: toolkit\[0\]: min_driver_linux = 'banana' is not a version"
    ):
        Compat.from_dir(tmp_path)
    (tmp_path / "cuda.toml").write_text(re.sub(r'source = "[^"]*"', 'source = ""', text, count=1))
    with pytest.raises(CompatError, match="every row needs a source"):
        Compat.from_dir(tmp_path)
    (tmp_path / "cuda.toml").write_text("[[toolkit]\n")
    with pytest.raises(CompatError, match="not valid TOML"):
        Compat.from_dir(tmp_path)
    with pytest.raises(CompatError, match="cannot be read"):
        Compat.from_dir(tmp_path / "nowhere")


def test_a_row_becomes_its_struct_field_by_field() -> None:
    """Row.struct reads each field by its type, and a bad value names file, table, row, key."""
    from gpucheck.compat.cudnn import CudnnRelease
    from gpucheck.compat.extensions import Pairing
    from gpucheck.compat.rows import Row

    row = {"package": "torchvision", "torch": "2.5", "versions": ["0.20"], "source": "s"}
    pairing = Row(Path("extensions.toml"), "pairing", 3, row).struct(Pairing)
    assert pairing == Pairing("torchvision", "2.5", ("0.20",), False, "s")  # and_later absent
    with pytest.raises(
        CompatError, match=r"^extensions.toml: pairing\[3\]: and_later must be true"
    ):
        Row(Path("extensions.toml"), "pairing", 3, {**row, "and_later": "yes"}).struct(Pairing)
    with pytest.raises(
        CompatError, match=r"^extensions.toml: pairing\[3\]: versions must be a list"
    ):
        Row(Path("extensions.toml"), "pairing", 3, {**row, "versions": None}).struct(Pairing)
    cudnn = {"version": "9.1.0", "cuda_majors": [11, 12], "source": "s"}
    lists = ("covers", "cuda", "compute_capabilities")
    release = Row(Path("cudnn.toml"), "release", 0, cudnn).struct(CudnnRelease, lists)
    assert (release.cuda_majors, release.covers, release.min_driver_linux) == ((11, 12), (), {})
    with pytest.raises(CompatError, match=r"cuda_majors must be a list of integers"):
        bad = {**cudnn, "cuda_majors": [12, "13"]}
        Row(Path("cudnn.toml"), "release", 0, bad).struct(CudnnRelease, lists)


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("RTX 4090", "GeForce RTX 4090"),  # the trial: "closest known: RTX A4000..."
        ("4090", "GeForce RTX 4090"),
        ("GeForce RTX 4090", "GeForce RTX 4090"),
        ("H100", "NVIDIA H100"),
        ("A100", "NVIDIA A100"),
        ("Tesla K80", "Tesla K80"),
    ],
)
def test_compat_gpu_resolves_a_name_whose_words_one_known_gpu_holds(query: str, name: str) -> None:
    from gpucheck.compat import answers

    assert answers.gpu(load(), query).data["name"] == name


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "RTX 40",
            "GPU 'RTX 40' is not in the compat data (closest known: GeForce RTX 4090, "
            "GeForce RTX 4080, GeForce RTX 4070)",
        ),
        (
            "RTX 4090 D",
            "GPU 'RTX 4090 D' is not in the compat data (closest known: GeForce RTX 4090, ",
        ),
        (
            "Quadro Foo",
            "GPU 'Quadro Foo' is not in the compat data (closest known: Quadro ",
        ),
        ("zzz", "GPU 'zzz' is not in the compat data (closest known: "),
        ("RTX", "GPU 'RTX' names several known GPUs: GeForce RTX 2060, GeForce RTX 2070, "),
        ("  ", "GPU name is empty"),  # not three GPUs picked at random as "closest"
    ],
)
def test_compat_gpu_unknown_or_ambiguous_names_the_known_ones(query: str, message: str) -> None:
    from gpucheck.compat import answers

    with pytest.raises(answers.UnknownVersion) as info:
        answers.gpu(load(), query)
    assert str(info.value).startswith(message)


def test_kernel_archs_and_ptxas_rows_are_checked_as_they_load() -> None:
    """A [[kernel_archs]] row needs compute capabilities, and `cuda_for` only names archs the
    row lists; a [[ptxas_newer_than_driver]] behaviour is one of two words."""
    from gpucheck.compat.extensions import ExtensionData
    from gpucheck.compat.frameworks import JaxData

    row = {"package": "flash-attn", "from": "2.0.0", "archs": ["8.0", "9.0"]}
    row |= {"instead": "SDPA", "source": "s"}
    data = ExtensionData.from_data(Path("extensions.toml"), {"kernel_archs": [row]})
    kernels = data.kernel_archs("flash-attn", "2.6.3+cu123torch2.4")
    assert (
        kernels is not None and kernels.runs_on("8.9") == "8.0" and kernels.runs_on("7.5") is None
    )
    assert data.kernel_archs("flash-attn", "1.0.9") is None
    with pytest.raises(CompatError, match=r"kernel_archs\[0\]: archs must be compute capab"):
        ExtensionData.from_data(
            Path("extensions.toml"), {"kernel_archs": [{**row, "archs": ["x"]}]}
        )
    with pytest.raises(CompatError, match=r"cuda_for names an arch that archs does not list"):
        bad = {**row, "cuda_for": {"12.0": "12.8"}}
        ExtensionData.from_data(Path("extensions.toml"), {"kernel_archs": [bad]})
    with pytest.raises(CompatError, match=r"and_newer rows name one arch, the lowest"):
        floor_of_two: dict[str, object] = {**row, "and_newer": True}
        ExtensionData.from_data(Path("extensions.toml"), {"kernel_archs": [floor_of_two]})
    ptxas = {"from": "0.4.24", "behaviour": "falls_back", "source": "s"}
    jax = JaxData.from_data(Path("jax.toml"), {"ptxas_newer_than_driver": [ptxas]})
    assert jax.ptxas_behaviour("0.4.23") is None
    found = jax.ptxas_behaviour("0.4.31")
    assert found is not None and found.behaviour == "falls_back"
    with pytest.raises(CompatError, match=r"behaviour must be one of fails, falls_back, unknown"):
        bad_ptxas = {**ptxas, "behaviour": "slow"}
        JaxData.from_data(Path("jax.toml"), {"ptxas_newer_than_driver": [bad_ptxas]})


def test_an_and_newer_kernel_archs_row_runs_on_every_newer_gpu() -> None:
    """A row from a documented floor (vLLM's "compute capability 7.5 or higher") covers that
    arch and every newer GPU, across majors; a row with a list does not."""
    from gpucheck.compat.extensions import ExtensionData

    row = {"package": "vllm", "from": "0.21.0", "archs": ["7.5"], "and_newer": True}
    row |= {"instead": "transformers", "source": "s"}
    data = ExtensionData.from_data(Path("extensions.toml"), {"kernel_archs": [row]})
    floor = data.kernel_archs("vllm", "0.21.0")
    assert floor is not None and floor.and_newer
    assert (floor.runs_on("7.5"), floor.runs_on("12.0"), floor.runs_on("7.0")) == (
        "7.5",
        "7.5",
        None,
    )
    assert floor.carried() == "compute capability 7.5 and newer"
    listed = ExtensionData.from_data(
        Path("extensions.toml"), {"kernel_archs": [{**row, "and_newer": False}]}
    ).kernel_archs("vllm", "0.21.0")
    assert listed is not None and listed.runs_on("12.0") is None
    assert listed.carried() == "compute capability 7.5 only"
