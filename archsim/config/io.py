"""YAML loading, preset-name resolution and JSON Schema export."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, MutableMapping, Sequence
from importlib import import_module, resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Union

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from archsim.config.base import ArchsimModel
from archsim.config.messages import validation_to_config_error
from archsim.config.names import fit_name
from archsim.config.workload import WorkloadSpec
from archsim.errors import ConfigError, UnknownNameError, shown_name, shown_value

if TYPE_CHECKING:  # the accelerator models load when a config names them
    from archsim.config.sweep import SweepSpec

__all__ = [
    "apply_set",
    "parse_overrides",
    "HARDWARE_MODELS",
    "load_hardware",
    "load_workload",
    "load_sweep",
    "list_presets",
    "preset_dirs",
    "read_yaml",
    "parse_yaml",
    "hardware_from_dict",
    "json_schema",
]


class _Models(MutableMapping[str, type[ArchsimModel]]):
    """Accelerator name -> config model, each imported when first looked up: building every
    pydantic model (the GPU, system, SCNN, sweep ones) cost a systolic run ~0.05-0.08 s."""

    def __init__(self, where: dict[str, str]) -> None:
        self._where = dict(where)  # name -> "module:Class"
        self._models: dict[str, type[ArchsimModel]] = {}

    def __getitem__(self, name: str) -> type[ArchsimModel]:
        if name not in self._models:
            module, cls = self._where[name].split(":")
            self._models[name] = getattr(import_module(module), cls)
        return self._models[name]

    def __setitem__(self, name: str, model: type[ArchsimModel]) -> None:
        self._where[name] = f"{model.__module__}:{model.__name__}"
        self._models[name] = model

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._models.pop(name, None)

    def __contains__(self, name: object) -> bool:  # without importing the model
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


#: accelerator name -> config model. New accelerators register here.
HARDWARE_MODELS: MutableMapping[str, type[ArchsimModel]] = _Models(
    {
        "eie": "archsim.config.eie:EieConfig",
        "scnn": "archsim.config.scnn:ScnnConfig",
        "dcnn": "archsim.config.scnn:DcnnConfig",
        "tensor_core": "archsim.config.gpu:GpuConfig",
        "systolic": "archsim.config.systolic:SystolicConfig",
        "system": "archsim.config.system:SystemConfig",
    }
)


def __getattr__(name: str) -> Any:
    """``HardwareConfig``: the union of every registered model (imports them all)."""
    if name == "HardwareConfig":
        return Union[tuple(HARDWARE_MODELS.values())]  # noqa: UP007 - runtime union
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_KINDS = {"hardware": "hw_configs", "workload": "workloads", "sweep": "sweeps"}


def preset_dirs(kind: str) -> list[Path]:
    """Directories searched for presets of ``kind`` ('hardware', 'workload', 'sweep').

    The wheel ships presets as package data (``archsim/_presets``); a source checkout has them at
    the repository root. Both are searched, package data first.
    """
    if kind not in _KINDS:
        raise UnknownNameError(f"unknown preset kind {kind!r}; allowed: {', '.join(_KINDS)}")
    folder = _KINDS[kind]
    dirs: list[Path] = []
    packaged = Path(str(resources.files("archsim"))) / "_presets" / folder
    if packaged.is_dir():
        dirs.append(packaged)
    checkout = Path(__file__).resolve().parents[2] / folder
    if checkout.is_dir() and checkout not in dirs:
        dirs.append(checkout)
    return dirs


def list_presets(kind: str) -> list[str]:
    """Sorted preset names of ``kind``."""
    names: set[str] = set()
    for d in preset_dirs(kind):
        names.update(p.stem for p in d.glob("*.yaml"))
    return sorted(names)


_ACCELERATOR_LINE = re.compile(r"^accelerator:\s*([A-Za-z_]\w*)\s*$", re.MULTILINE)


def preset_accelerators() -> dict[str, str]:
    """Hardware preset name -> its ``accelerator`` (read from each file's top-level line, not
    validated: for messages and name checks)."""
    found: dict[str, str] = {}
    for d in reversed(preset_dirs("hardware")):  # the first folder's preset wins
        for p in d.glob("*.yaml"):
            m = _ACCELERATOR_LINE.search(p.read_text(encoding="utf-8", errors="replace"))
            if m:
                found[p.stem] = m.group(1)
    return found


def _stat_ok(path: Path, test: str) -> bool:
    """``path.exists()`` / ``path.is_file()``, False where the name itself cannot be looked up
    (longer than the file system allows, a NUL byte)."""
    try:
        return bool(getattr(path, test)())
    except (OSError, ValueError):
        return False


def _missing(path: Path, kind: str) -> str:
    """Why ``path`` (not a regular file) cannot be read as a ``kind`` YAML."""
    if _stat_ok(path, "is_dir"):
        return f"a folder, and no {kind} preset has that name; allowed: a YAML file or a preset"
    if _stat_ok(path, "exists"):  # a FIFO or a device: reading would block or never end
        return f"not a regular file; allowed: a {kind} YAML file or a preset name"
    return f"{kind} file not found; allowed: an existing {kind} YAML file, or a preset name"


def _resolve(name_or_path: str | Path, kind: str) -> Path:
    """A YAML path (a ``.yaml``/``.yml`` name, a name with a folder in it, or an existing
    file) or a preset name. A folder that merely shares a preset's name (``archsim run v100
    -o v100`` leaves one) does not hide the preset."""
    text = str(name_or_path)
    if not text.strip():  # Path("") is the current folder: "': a folder, and no preset ..."
        raise ConfigError(
            kind, "", f"an empty name {text!r}; allowed: a {kind} YAML file or a preset "
            f"({', '.join(list_presets(kind)) or 'none'})"
        )  # fmt: skip
    shown = shown_name(text)
    path = Path(text).expanduser()
    if path.suffix in (".yaml", ".yml") or "/" in text or _stat_ok(path, "is_file"):
        if not _stat_ok(path, "is_file"):
            raise ConfigError(shown, "", _missing(path, kind))
        return path
    for d in preset_dirs(kind):
        candidate = d / f"{text}.yaml"
        if _stat_ok(candidate, "is_file"):
            return candidate
    if _stat_ok(path, "exists"):  # a folder of that name, and no preset
        raise ConfigError(shown, "", _missing(path, kind))
    names = ", ".join(list_presets(kind)) or "(none)"
    other = next((k for k in _KINDS if k != kind and text in list_presets(k)), None)
    hint = f" ({shown} is a {other} preset)" if other else ""
    raise ConfigError(shown, "", f"unknown {kind} preset{hint}; allowed: {names}")


#: Most values a YAML document may hold once its aliases are expanded (a config has hundreds).
MAX_YAML_VALUES = 1_000_000

#: Deepest nesting of mappings and lists a YAML document may have (the presets reach 5). Checked
#: after parsing, so the limit does not depend on the libyaml build (1,000 levels since 0.2.5,
#: none before) or on the interpreter's recursion limit (a pytest-xdist worker's is higher).
MAX_YAML_DEPTH = 64
NESTED_TOO_DEEPLY = f"nested too deeply; allowed: at most {MAX_YAML_DEPTH} levels"


class _TooDeep(Exception):
    """A YAML document nested deeper than ``MAX_YAML_DEPTH``."""


#: libyaml's parser where PyYAML has it (5-7x faster: a 2,000-layer workload 0.41 -> 0.08 s,
#: the h100 preset 9 -> 2 ms); the construction below is the same Python either way
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):
    """SafeLoader that rejects duplicate keys instead of letting the last one win.

    Keys merged in with ``<<: *anchor`` may still be overridden by the mapping's own keys.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in seen:
                    raise _DuplicateKey(key, seen[key], line)
                seen[key] = line
            except TypeError:  # an unhashable key (a list or mapping used as a key)
                raise yaml.constructor.ConstructorError(
                    None, None, "a list or mapping cannot be a key", key_node.start_mark
                ) from None
        return super().construct_mapping(node, deep=deep)


# YAML 1.1 (PyYAML) reads ``1e9`` as text: a float needs a dot there. Configs are full of
# ``clock_hz: 1e9``, and text is no longer coerced into numbers, so floats follow YAML 1.2.
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


class _DuplicateKey(Exception):
    def __init__(self, key: Any, first: int, line: int) -> None:
        super().__init__(
            f"duplicate key {key!r} at line {line} (first at line {first}); "
            "allowed: each key once per mapping"
        )


def _count_values(data: Any, limit: int) -> None:
    """Raise ``OverflowError`` when ``data`` holds more than ``limit`` values (aliases expanded),
    ``_TooDeep`` when it nests deeper than ``MAX_YAML_DEPTH``."""
    stack, count = [(data, 0)], 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > limit:
            raise OverflowError
        if isinstance(node, dict | list):
            if depth >= MAX_YAML_DEPTH:
                raise _TooDeep
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)


#: text past which the events are counted before the document is built (the build runs in
#: Python: a 20 MB workload took over a minute and 2 GB before its values were counted)
_PRESCAN_CHARS = 1_000_000


#: tags whose collections the loader builds into one value (a set; omap and pairs: lists of
#: tuples, whose items ``_count_values`` does not open), and the merge key's
_OPAQUE_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("set", "omap", "pairs"))
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _is_merge_key(event: yaml.Event) -> bool:
    """``<<`` (or ``!!merge``) as a mapping key: its value's keys join the mapping, where the
    mapping's own keys may replace them, so none of it is counted here."""
    if not isinstance(event, yaml.ScalarEvent):
        return False
    return event.tag == _MERGE_TAG or (event.value == "<<" and event.implicit[0])


def _prescan(text: str) -> None:
    """Raise ``OverflowError`` early when ``text`` holds more than ``MAX_YAML_VALUES`` values,
    from libyaml's event stream, before any Python object is built (1-2.5 s a million events).
    It counts as :func:`_count_values` does, never more: containers and the values in them,
    an alias as one (its expansion can only add), not keys, not what a merge key brings in
    (the mapping's own keys may replace it), and a set, omap or pairs collection as one."""
    count, quiet = 0, 0  # quiet: open collections whose contents are not counted
    stack: list[list[Any]] = []  # per open container: [is a mapping, last node a key, quiet]
    merge_value = False  # the next node is a merge key's value
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.CollectionEndEvent):
            quiet -= stack.pop()[2]
            continue
        if not isinstance(event, yaml.NodeEvent):  # stream and document starts and ends
            continue
        top = stack[-1] if stack else None
        is_key = False
        if top is not None and top[0]:
            top[1] = not top[1]
            is_key = top[1]
        silent = quiet > 0 or is_key or merge_value
        merge_value = is_key and quiet == 0 and _is_merge_key(event)
        if not silent:
            count += 1
            if count > MAX_YAML_VALUES:
                raise OverflowError
        if isinstance(event, yaml.CollectionStartEvent):
            hush = int(silent or event.tag in _OPAQUE_TAGS)
            stack.append([isinstance(event, yaml.MappingStartEvent), False, hush])
            quiet += hush


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text strictly: no duplicate keys, bounded nesting and size; one-line errors."""
    try:
        if len(text) > _PRESCAN_CHARS:
            _prescan(text)
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
        _count_values(data, MAX_YAML_VALUES)
    except _DuplicateKey as exc:
        raise ConfigError(source, "", str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        if "nesting depth" in problem:  # libyaml's own limit (1,000 levels)
            problem = NESTED_TOO_DEEPLY
        raise ConfigError(source, "", f"invalid YAML{where}: {problem}") from None
    except (RecursionError, _TooDeep):
        raise ConfigError(source, "", f"invalid YAML: {NESTED_TOO_DEEPLY}") from None
    except ValueError as exc:  # an integer of thousands of digits (Python's 4,300-digit cap)
        if "integer string conversion" not in str(exc):
            raise
        raise ConfigError(
            source,
            "",
            "invalid YAML: an integer of more than 4,300 digits; allowed: a number "
            "of a field's range",
        ) from None
    except OverflowError:
        raise ConfigError(
            source,
            "",
            f"YAML too large: more than {MAX_YAML_VALUES:,} values once aliases are expanded",
        ) from None
    return data


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping, turning syntax errors into a one-line ``ConfigError``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(path), "", f"not UTF-8 text (byte {exc.start}); allowed: a UTF-8 YAML file"
        ) from None
    data = parse_yaml(text, str(path))
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", "must be a YAML mapping (key: value pairs)")
    bad = next((k for k in data if not isinstance(k, str)), None)
    if bad is not None:
        raise ConfigError(str(path), str(bad), "keys must be text; allowed: field names")
    return data


def _check_schema_version(data: dict[str, Any], source: str) -> None:
    if "schema_version" not in data:
        raise ConfigError(source, "schema_version", "required field is missing; allowed: 1")
    if type(data["schema_version"]) is not int or data["schema_version"] != 1:  # not 1.0, true
        raise ConfigError(
            source, "schema_version", f"unsupported version {data['schema_version']!r}; allowed: 1"
        )


def hardware_from_dict(data: dict[str, Any], source: str = "<api>") -> ArchsimModel:
    """Validate a hardware mapping into the config model its ``accelerator`` names."""
    _check_schema_version(data, source)
    acc = data.get("accelerator")
    model = HARDWARE_MODELS.get(acc) if isinstance(acc, str) else None
    if model is None:
        allowed = ", ".join(sorted(HARDWARE_MODELS))
        if "accelerator" not in data:
            raise ConfigError(
                source, "accelerator", f"required field is missing; allowed: {allowed}"
            )
        raise ConfigError(source, "accelerator", f"unknown accelerator {acc!r}; allowed: {allowed}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_to_config_error(exc, source, model) from None


#: Configs loaded from files in this process, by (kind, path as given, absolute path, file
#: bytes), with a digest of their contents: the models are frozen, so a repeated
#: ``simulate("eie", ...)`` shares one instead of parsing and validating the same YAML again
#: (15 ms for a preset; reading it is 20 us). Frozen stops assignment, not a caller changing a
#: list inside (``cfg.tiles.clear()``): a model whose contents no longer match its digest
#: (0.1-0.5 ms to check) is loaded afresh, so no later load sees the change.
_LOADED: dict[tuple[str, str, str, bytes], tuple[ArchsimModel, int]] = {}
_LOADED_MAX = 64


def _file_key(kind: str, path: Path) -> tuple[str, str, str, bytes] | None:
    try:
        if path.stat().st_size > 1 << 20:
            return None
        return (kind, str(path), str(path.absolute()), path.read_bytes())
    except OSError:
        return None  # read_yaml reports it


def _remember(key: tuple[str, str, str, bytes] | None, model: Any) -> Any:
    if key is not None:
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.clear()
        _LOADED[key] = (model, hash(model.model_dump_json()))
    return model


def _recall(key: tuple[str, str, str, bytes] | None) -> Any:
    """The model loaded before under ``key``, if its contents are as loaded; else None."""
    hit = _LOADED.get(key) if key is not None else None
    if hit is None or hash(hit[0].model_dump_json()) != hit[1]:
        return None
    return hit[0]


def _wrong_kind(value: BaseModel, kind: str) -> NoReturn:
    """A config of another kind where ``kind`` was expected (arguments swapped)."""
    raise ConfigError(
        "<api>", kind, f"got a {type(value).__name__}; allowed: a {kind} config, a {kind} "
        "preset name or a YAML path (were the hardware and workload arguments swapped?)"
    )  # fmt: skip


def _check_name_type(value: object, kind: str) -> None:
    if not isinstance(value, str | os.PathLike):
        raise ConfigError(
            "<api>", kind, f"got {type(value).__name__} {shown_name(repr(value))}; allowed: a "
            f"{kind} config, a {kind} preset name or a YAML path"
        )  # fmt: skip


def load_hardware(name_or_path: str | Path | ArchsimModel) -> ArchsimModel:
    """Load a hardware config from a preset name (``"eie"``) or a YAML path."""
    if isinstance(name_or_path, ArchsimModel):
        if "accelerator" not in type(name_or_path).model_fields:
            _wrong_kind(name_or_path, "hardware")
        return name_or_path
    _check_name_type(name_or_path, "hardware")
    path = _resolve(name_or_path, "hardware")
    key = _file_key("hardware", path)
    hit = _recall(key)
    if hit is not None:
        return hit
    return _remember(key, hardware_from_dict(_beside(read_yaml(path), path), str(path)))


def _beside(data: Any, path: Path) -> Any:
    """A system YAML's ``gpu`` given as a relative YAML path, found beside the file (as a
    workload's data files are), not in the current folder; anything else unchanged."""
    if not isinstance(data, dict) or data.get("accelerator") != "system":
        return data
    gpu = data.get("gpu")
    if not isinstance(gpu, str):
        return data
    if not gpu.endswith((".yaml", ".yml")) or Path(gpu).is_absolute():
        return data
    beside = path.parent / gpu
    return {**data, "gpu": str(beside)} if beside.is_file() else data


def load_workload(name_or_path: str | Path | WorkloadSpec) -> WorkloadSpec:
    """Load a workload from a preset name (``"eie_benchmarks"``) or a YAML path."""
    if isinstance(name_or_path, WorkloadSpec):
        return name_or_path
    if isinstance(name_or_path, BaseModel):
        _wrong_kind(name_or_path, "workload")
    _check_name_type(name_or_path, "workload")
    if Path(str(name_or_path)).suffix.lower() == ".onnx":  # not YAML: "not UTF-8 text"
        raise ConfigError(
            shown_name(str(name_or_path)),
            "",
            "an ONNX model, not a workload YAML; allowed: "
            "archsim.import_onnx(path) first (or `archsim run HW model.onnx`, which imports it)",
        )
    path = _resolve(name_or_path, "workload")
    key = _file_key("workload", path)
    hit = _recall(key)
    if hit is not None:
        return hit  # type: ignore[no-any-return]
    return _remember(key, _read_workload(path))


def _read_workload(path: Path) -> WorkloadSpec:
    data = read_yaml(path)
    _check_schema_version(data, str(path))
    if isinstance(data, dict) and "accelerator" in data and "layers" not in data:
        raise ConfigError(
            str(path), "accelerator", "a hardware file, not a workload; allowed: a workload "
            "YAML (name, source, layers)",
        )  # fmt: skip
    try:
        spec = WorkloadSpec.model_validate(data)
    except ValidationError as exc:
        raise validation_to_config_error(exc, str(path), WorkloadSpec) from None
    return spec.bind(path.parent, str(path))


def load_sweep(name_or_path: str | Path | SweepSpec) -> tuple[SweepSpec, Path]:
    """Load a sweep spec from a preset name or a YAML path; also returns the folder that its
    relative ``hardware``/``workload`` paths are resolved against."""
    from archsim.config.sweep import SweepSpec

    if isinstance(name_or_path, SweepSpec):
        return name_or_path, Path.cwd()
    if isinstance(name_or_path, BaseModel):
        _wrong_kind(name_or_path, "sweep")
    _check_name_type(name_or_path, "sweep")
    path = _resolve(name_or_path, "sweep")
    data = read_yaml(path)
    _check_schema_version(data, str(path))
    try:
        return SweepSpec.model_validate(data), path.parent
    except ValidationError as exc:
        raise validation_to_config_error(exc, str(path), SweepSpec) from None


SCHEMA_KINDS = ("hardware", "workload", "sweep", "results")


def json_schema(kind: str) -> dict[str, Any]:
    """JSON Schema of 'hardware' (any registered accelerator), 'workload' or 'sweep' configs, or
    of one 'results' row; each with a ``$id`` (``urn:archsim:schema:<kind>:1``)."""
    if kind == "results":
        from archsim.result_columns import results_schema

        return results_schema()
    if kind == "hardware":
        models = tuple(HARDWARE_MODELS.values())
        if len(models) == 1:
            schema = models[0].model_json_schema()
        else:
            schema = TypeAdapter(Union[models]).json_schema()  # noqa: UP007 - runtime union
        schema.setdefault("title", "archsim hardware config")
        schema.setdefault("description", "One accelerator, selected by its `accelerator` field.")
    elif kind == "workload":
        schema = WorkloadSpec.model_json_schema()
    elif kind == "sweep":
        from archsim.config.sweep import SweepSpec

        schema = SweepSpec.model_json_schema()
    else:
        allowed = ", ".join(SCHEMA_KINDS)
        raise UnknownNameError(f"unknown schema kind {kind!r}; allowed: {allowed}")
    return {"$id": f"urn:archsim:schema:{kind}:1", **schema}


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``["a.b=3", "c=true"]`` -> ``{"a.b": 3, "c": True}`` (values parsed as YAML scalars)."""
    out: dict[str, Any] = {}
    for item in items:
        path, sep, raw = item.partition("=")
        path = path.strip()
        if not sep or not path or "" in path.split("."):
            raise ConfigError(
                "--set", item, "malformed; allowed: PATH=VALUE, e.g. pe_array.num_pes=128"
            )
        if not raw.strip():
            raise ConfigError(
                "--set", path, "empty value; allowed: PATH=VALUE (PATH=\"''\" for empty text)"
            )
        if path in out:
            raise ConfigError("--set", path, "given twice; allowed: each path once")
        try:
            out[path] = parse_yaml(raw, "--set")
        except ConfigError:
            out[path] = raw
    return out


def apply_set(hw: Any, items: Sequence[str]) -> Any:
    """``hw`` with ``--set PATH=VALUE`` items applied (one-line errors naming ``--set``); unless
    the items set ``name``, the result is named after the base and its changes, so results and
    reports never call the changed design by the preset's name."""
    overrides = parse_overrides(items)
    if "name" not in overrides:
        changes = ", ".join(f"{k}={shown_value(v) or v}" for k, v in overrides.items())
        overrides["name"] = fit_name(f"{hw.name} ({changes})")
    return hw.with_overrides(overrides, source="--set")
