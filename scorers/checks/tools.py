"""Turn level: a tool the contract knows, called with arguments its schema allows."""

from __future__ import annotations

from turnwatch.scorers.scorer import Context, Draft, Result, call_evidence, counted

_MAX_ERRORS_PER_CALL = 3
_MAX_DETAIL_CHARS = 120


def tool_selection(ctx: Context) -> Result:
    assert ctx.contract is not None
    drafts = [
        Draft(
            call.turn_index,
            f"called {call.name!r}, which the contract does not declare",
            evidence=call_evidence(call, "tools"),
        )
        for call in ctx.transcript.calls
        if call.name not in ctx.contract.tools
    ]
    return counted(drafts)


def argument_validity(ctx: Context) -> Result:
    assert ctx.contract is not None
    drafts = []
    for call in ctx.transcript.calls:
        tool = ctx.contract.tools.get(call.name)
        if tool is None:
            continue
        errors = list(tool.validator.iter_errors(call.call.arguments))
        for error in errors[:_MAX_ERRORS_PER_CALL]:
            # Built from the schema side (path, keyword, schema value), never from the instance:
            # jsonschema's own message quotes the argument value.
            where = "$" + "".join(f"[{part!r}]" for part in error.absolute_path)
            detail = f"{error.validator}={error.validator_value!r}"[:_MAX_DETAIL_CHARS]
            if error.validator == "required" and isinstance(call.call.arguments, dict):
                missing = [
                    name for name in error.validator_value if name not in call.call.arguments
                ]
                detail = f"missing required {missing}"
            elif error.validator == "additionalProperties":
                detail = "has properties the schema does not allow"
            evidence = call_evidence(
                call,
                f"tools.{call.name}.arguments",
                argument_path=where,
                schema_keyword=str(error.validator),
            )
            drafts.append(
                Draft(
                    call.turn_index,
                    f"{call.name} arguments at {where}: {detail}",
                    evidence=evidence,
                )
            )
    return counted(drafts)
