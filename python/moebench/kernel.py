"""moebench.Kernel: one family's problem bound to a backend and device (moe::Kernel in C++)."""

import itertools
import json
import operator
import weakref
from typing import Iterable, Mapping, Optional

from ._module import lib

# Every Kernel's id, given when it is made: framework wrappers (moebench.torch's custom ops) pass
# the id where they cannot pass the object, and find the live Kernel again by it.
_ids = itertools.count(1)
_live = weakref.WeakValueDictionary()


def by_id(kid: int):
    """The live Kernel with this id, or None."""
    return _live.get(kid)


def _words(params: Optional[Mapping], what: str) -> str:
    """A dict of parameters as JSON words, read by the family's specs as the CLI reads flags."""
    if params is None:
        return ""
    if not isinstance(params, Mapping):
        raise TypeError(f"moebench.Kernel: {what} must be a dict of parameter names to values, got {type(params).__name__}")
    words = {}
    for name, value in params.items():
        if isinstance(value, bool):
            value = int(value)
        words[str(name)] = str(value)
    return json.dumps(words)


class Kernel:
    """A family's problem (everything but the token count), its config per token count chosen
    from the tuned tables as `moebench lookup` shows, or given explicitly as `config`."""

    def __init__(self, family: str, problem: Optional[Mapping] = None, backend: str = "cuda", device: int = 0,
                 table_dirs: Optional[Iterable] = None, config: Optional[Mapping] = None):
        if isinstance(table_dirs, (str, bytes)):
            table_dirs = [table_dirs]
        dirs = json.dumps([str(d) for d in (table_dirs or [])])
        self._handle = lib().kernel_new(str(family), _words(problem or {}, "problem"), str(backend), int(device),
                                        dirs, _words(config, "config"))
        self.backend = str(backend)
        self.device = int(device)
        self._id = next(_ids)
        _live[self._id] = self

    @property
    def family(self) -> str:
        return lib().kernel_family(self._handle)

    @property
    def problem(self) -> dict:
        """The complete problem, with tokens=1 as a placeholder."""
        return json.loads(lib().kernel_problem(self._handle))

    def config(self, tokens: int) -> dict:
        return json.loads(lib().kernel_config(self._handle, tokens_arg(self, tokens)))

    def describe(self, tokens: int) -> str:
        """One line: which table and entry gives the config, or the default and why."""
        return lib().kernel_describe(self._handle, tokens_arg(self, tokens))

    def workspace_bytes(self, tokens: int) -> int:
        return lib().kernel_workspace_bytes(self._handle, tokens_arg(self, tokens))

    def max_rows(self, tokens: int) -> int:
        """dispatch: the rows of src and x_sorted, the most any routing produces."""
        return lib().dispatch_max_rows(self._handle, tokens_arg(self, tokens))

    def outputs(self, tokens: int, rows: Optional[int] = None) -> list:
        """What a call at `tokens` writes: [{"name", "dtype", "shape"}], dtype as moebench names it
        ("f32", "bf16", ...). `rows`: dispatched rows given to gmm or combine (default tokens)."""
        t = tokens_arg(self, tokens)
        return json.loads(lib().kernel_outputs(self._handle, t, t if rows is None else operator.index(rows)))

    def __repr__(self) -> str:
        return f"moebench.Kernel({self.family!r}, backend={self.backend!r}, device={self.device})"


def build_id(family: str) -> str:
    """The id of this build of a family's kernels, which the tables it reads must record."""
    return lib().build_id(str(family))


def tokens_arg(kernel, tokens) -> int:
    """`tokens` as the module takes it; one past int64 is refused here, naming the range the
    module checks every other count against (the range `--tokens` takes)."""
    t = operator.index(tokens)
    if not -(2**63) <= t < 2**63:
        lo, hi = lib().kernel_tokens_range(handle(kernel))
        raise ValueError(f"{kernel.family}: tokens = {t} is out of range [{lo}, {hi}], the token counts --tokens takes")
    return t


def handle(kernel) -> object:
    if not isinstance(kernel, Kernel):
        raise TypeError(f"expected a moebench.Kernel as the first argument, got {type(kernel).__name__}")
    return kernel._handle
