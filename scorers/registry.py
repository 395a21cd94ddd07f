"""Loading contracts from YAML files, with errors that name the file, the line and the field.

The YAML is composed once into a node tree (which keeps each value's position) and constructed
from that same tree, so a pydantic error location can be walked back to the line it came from.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError
from turnwatch.scorers.contract import Contract


class ContractError(Exception):
    """A contract file is invalid; each line of the message is `file:line: field: problem`."""


def load_contract(path: Path) -> Contract:
    text = path.read_text(encoding="utf-8")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else 1
        raise ContractError(f"{path}:{line}: invalid YAML: {exc.problem}") from exc
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ContractError(f"{path}:1: a contract is a mapping of fields")
    try:
        return Contract.model_validate(data)
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"]) or "(contract)"
            lines.append(f"{path}:{_line_of(node, error['loc'])}: {field}: {error['msg']}")
        raise ContractError("\n".join(lines)) from exc


def _line_of(node: yaml.Node, loc: tuple[int | str, ...]) -> int:
    """The line of the deepest node on the error's path (a missing field points at its parent)."""
    for part in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((value for key, value in node.value if key.value == str(part)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            child = node.value[part] if part < len(node.value) else None
        if child is None:
            break
        node = child
    return node.start_mark.line + 1


class ContractRegistry:
    """Contracts by service name; a service without one gets the generic checks only."""

    def __init__(self, contracts: list[Contract]) -> None:
        self._by_service: dict[str, Contract] = {}
        for contract in contracts:
            if contract.service in self._by_service:
                raise ContractError(f"two contracts for service {contract.service!r}")
            self._by_service[contract.service] = contract

    @classmethod
    def from_directory(cls, directory: Path) -> ContractRegistry:
        """Every `*.yaml` / `*.yml` file; all broken files are reported together."""
        contracts: list[tuple[Path, Contract]] = []
        errors: list[str] = []
        files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
        for path in files:
            try:
                contracts.append((path, load_contract(path)))
            except ContractError as exc:
                errors.append(str(exc))
        seen: dict[str, Path] = {}
        for path, contract in contracts:
            if contract.service in seen:
                errors.append(
                    f"{path}:1: service: {contract.service!r} already has a contract "
                    f"in {seen[contract.service]}"
                )
            seen.setdefault(contract.service, path)
        if errors:
            raise ContractError("\n".join(errors))
        return cls([contract for _, contract in contracts])

    def for_service(self, service: str) -> Contract | None:
        return self._by_service.get(service)

    def services(self) -> list[str]:
        return sorted(self._by_service)
