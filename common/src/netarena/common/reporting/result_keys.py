"""What in results files the AgentBeats app's preload or the leaderboard queries cannot take.

Keys spelled with different letter case in different files (malt's old ``Label`` beside
``label``) make DuckDB's ``read_json_auto`` refuse the whole folder: ``case_clashes`` names
them and ``normalise_keys`` renames them. Records whose participant role is not a name
(``ROLE_NAME``) are left out by the queries: ``bad_roles`` names their files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netarena.common.core.result_files import write_atomic
from netarena.common.core.types import valid_role

__all__ = ["case_clashes", "normalise_keys", "bad_roles"]


def _keys(value: Any, found: dict[str, set[str]], file: str) -> None:
    """Every object key under ``value``, noting which file spells it so."""
    if isinstance(value, dict):
        for key, inner in value.items():
            found.setdefault(key, set()).add(file)
            _keys(inner, found, file)
    elif isinstance(value, list):
        for inner in value:
            _keys(inner, found, file)


def case_clashes(results_dir: Path) -> list[str]:
    """Keys spelled with different letter case across the files (what the preload refuses).

    Returns:
        One description per clash, naming the files of each spelling.
    """
    found: dict[str, set[str]] = {}
    for path in sorted(results_dir.glob("*.json")):
        try:
            _keys(json.loads(path.read_text(encoding="utf-8")), found, path.name)
        except (OSError, ValueError):
            continue
    spellings: dict[str, list[str]] = {}
    for key in found:
        spellings.setdefault(key.lower(), []).append(key)
    return ["; ".join(f"{k!r} in {', '.join(sorted(found[k])[:3])}"
                      + (" ..." if len(found[k]) > 3 else "") for k in sorted(keys))
            for keys in spellings.values() if len(keys) > 1]


def bad_roles(results_dir: Path) -> dict[str, int]:
    """Files holding query records whose participant role is not a name, and how many.

    The queries skip those records (``ROLE_NAME``); this names the files so that the
    maintainer can see what was left out.
    """
    if (results_dir / "results").is_dir():
        results_dir = results_dir / "results"
    found: dict[str, int] = {}
    for path in sorted(results_dir.glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        records = doc.get("results") if isinstance(doc, dict) else None
        roles = [r.get("participant_role") for r in records if isinstance(r, dict)
                 ] if isinstance(records, list) else []
        count = sum(1 for role in roles if role is not None and not valid_role(role))
        if count:
            found[path.name] = count
    return found


def _canonical(spellings: list[str], counts: dict[str, int]) -> str:
    """The spelling to keep: NetArena's (all lower case) where present, else the commonest."""
    lower = [k for k in spellings if k == k.lower()]
    return lower[0] if lower else max(sorted(spellings), key=lambda k: counts[k])


def _renamed(value: Any, rename: dict[str, str]) -> Any:
    if isinstance(value, list):
        return [_renamed(inner, rename) for inner in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, inner in value.items():
        target: str = rename.get(key) or key
        # Two spellings in one object: NetArena's own (or the first) keeps the name.
        if target != key and (target in value or target in out):
            target = f"legacy_{key}"
        out[target] = _renamed(inner, rename)
    return out


def normalise_keys(results_dir: Path, *, write: bool = True) -> dict[Path, list[str]]:
    """Rename keys spelled with another letter case than in other files, so the app loads.

    The AgentBeats app's preload (``read_json_auto``) merges the keys of every file into one
    schema, case-insensitively, and refuses the folder when one key has two spellings
    (malt's old ``Label`` beside ``label``). Each clashing key is renamed, in every file, to
    NetArena's spelling (all lower case) or, when no spelling is, to the commonest; where an
    object already holds that spelling the other becomes ``legacy_<Key>``. Values, order
    and every other key stay as they were; files are rewritten atomically. Idempotent.

    Args:
        results_dir: A leaderboard repository's ``results`` folder (or the repository).
        write: Rewrite the files (``False``: only report what would change).

    Returns:
        Each changed file and the keys renamed in it (``Label -> label``).
    """
    if (results_dir / "results").is_dir():
        results_dir = results_dir / "results"
    docs: dict[Path, Any] = {}
    found: dict[str, set[str]] = {}
    for path in sorted(results_dir.glob("*.json")):
        try:
            docs[path] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        _keys(docs[path], found, path.name)
    spellings: dict[str, list[str]] = {}
    for key in found:
        spellings.setdefault(key.lower(), []).append(key)
    counts = {key: len(files) for key, files in found.items()}
    rename: dict[str, str] = {}
    for keys in spellings.values():
        if len(keys) > 1:
            keep = _canonical(keys, counts)
            rename.update({key: keep for key in keys if key != keep})
    changed: dict[Path, list[str]] = {}
    for path, doc in docs.items():
        in_file: dict[str, set[str]] = {}
        _keys(doc, in_file, path.name)
        renamed = sorted(f"{key} -> {rename[key]}" for key in in_file if key in rename)
        if renamed:
            changed[path] = renamed
            if write:
                write_atomic(path, json.dumps(_renamed(doc, rename), indent=1) + "\n")
    return changed
