"""What a layer package of checks/ declares: its checks in report order, the module each is
written in, the snapshot facts they read and the checks their verdicts rest on.

A declaration imports no check: the registry reads every layer's declaration to know the report
order, which module to import for an id (lazily: a doctor with --only gpus never imports the
framework checks) and which layer an id belongs to, and a check's module registers its function
with `registry.check` when imported. Adding a check is one function in its module plus its name
in its layer's declaration (`declare`).
"""

from __future__ import annotations

from msgspec import Struct, field

from gpucheck.model.layers import Layer


class LayerChecks(Struct, frozen=True):
    layer: Layer
    package: str  # the layer's package (its __name__): `checks` name modules in it
    # Each check: (id, the module of `package` that registers it), in report order (the order
    # a reader follows: root causes first).
    checks: tuple[tuple[str, str], ...]
    # The snapshot's fact groups the layer's checks read: a saved snapshot without one of them
    # (a partial file, an older version) leaves those checks unjudged, never failed.
    reads: tuple[str, ...]
    # The checks the layer's verdicts rest on. With --only, a selected check that has nothing
    # to judge says which of these failed, and their failures are reported with it.
    prerequisites: tuple[str, ...] = ()
    # What a snapshot must hold (any one of; registry.held's words) for a module's checks to
    # judge anything; a module not named here always can. A doctor of a saved snapshot imports
    # only the modules its snapshot can use (start-up time).
    module_needs: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def module(self, name: str) -> str:
        """The full name of the layer's module `name`."""
        return f"{self.package}.{name}"


# What a snapshot can hold for a module's checks (module_needs), besides a framework's key
# (model/frameworks.py) found in some environment: an environment at all, or system TensorRT
# libraries (registry.held tells them from a snapshot).
ANY_ENVIRONMENT = "environment"
SYSTEM_TENSORRT = "libnvinfer"


def declare(
    package: str,
    checks: tuple[tuple[str, ...], ...],
    reads: tuple[str, ...],
    prerequisites: tuple[str, ...] = (),
    module_needs: dict[str, tuple[str, ...]] | None = None,
) -> LayerChecks:
    """A layer package's declaration, from its `__name__` and its checks in report order as
    runs: (module, name, name, ...), each name an id without its layer's word ("gpus.lost" is
    "lost" in the gpus package). The layer is the package's own name."""
    layer = Layer(package.rsplit(".", 1)[-1])
    return LayerChecks(
        layer,
        package,
        checks=tuple((f"{layer.value}.{name}", run[0]) for run in checks for name in run[1:]),
        reads=reads,
        prerequisites=prerequisites,
        module_needs=module_needs or {},
    )
