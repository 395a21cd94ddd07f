"""The simulated user: its profile read from a recorded case (private state, release schedule,
script, authorisations, stopping rule), its moves (answers what is asked, never volunteers, declines
what the recorded user did not authorise, stops by its rule, says where it was unsure), and replay
with it against a reworded chatbot that the recorded transcript no longer fits."""

from __future__ import annotations

import json

from turnwatch.exporters.regressions.chat import ChatClient
from turnwatch.exporters.regressions.profile import Release, profile_of
from turnwatch.exporters.regressions.replay import (
    Comparison,
    ReplayOptions,
    Scoring,
    attribute,
    recorded_user,
    replay_all,
    scripted_user,
)
from turnwatch.exporters.regressions.results import RunOutcome, load_replay
from turnwatch.exporters.regressions.scenario import Scenario
from turnwatch.exporters.regressions.simulator import (
    DECLINE,
    UNKNOWN_FACT,
    ScriptedUser,
    SimulatorNote,
    StopReason,
)

from tests.support_bot import (
    CONTRACT,
    address,
    address_case,
    cases,
    order,
    refund_case,
    serve,
    status_case,
)
from tests.test_scorers_builders import SUPPORT_CONTRACT, bot, call, session, support_scorer, user
from turnwatch.app.cli import main
from turnwatch.tokens import TOKEN


def scenario(case) -> Scenario:
    return Scenario.of_case(case)


def test_profile_reads_private_state_schedule_script_and_authorisations():
    profile = profile_of(scenario(address_case(7)), CONTRACT)
    facts = {(fact.id, fact.value, fact.release, fact.answer) for fact in profile.facts}
    assert facts == {
        ("STREET_ADDRESS", address(7), Release.WHEN_ASKED, f"It's {address(7)}."),
        ("order_id", order(7), Release.WHEN_ASKED, f"The order number is {order(7)}."),
        ("order_id", order(7), Release.WHEN_ASKED, f"It's {order(7)}."),
    }
    assert [(turn.kind, turn.text) for turn in profile.script] == [
        ("goal", "Hi, I moved and my order needs a new delivery address."),
        ("follow_up", "Thanks, bye."),
    ]
    [authorisation] = profile.authorised
    assert (authorisation.tool, authorisation.answer) == ("update_address", "Yes, go ahead.")
    # The contract's user-turn budget is the stopping rule's.
    assert profile.stop.max_user_turns == CONTRACT.budgets.max_user_turns

    volunteered = profile_of(scenario(refund_case(8)), CONTRACT)
    [fact] = volunteered.facts
    assert (fact.id, fact.release, fact.script_turn) == ("order_id", Release.AT_TURN, 0)
    assert volunteered.authorised == []


def test_a_revision_is_scripted_as_recorded_and_released_at_its_turn():
    old, new = "<EMAIL_ADDRESS_0000aaaa>", "<EMAIL_ADDRESS_0000bbbb>"
    recorded = session(
        user("Please send the invoice."),
        bot("Sure, what is your e-mail?"),
        user(f"It's {old}."),
        bot("Thanks, sending it now."),
        user(f"Actually, use {new} instead."),
        bot("Done."),
    )
    case_scenario = Scenario(
        scenario_id="s",
        service="support-bot",
        goal="invoice",
        slices=[],
        turns=[_case_turn(turn) for turn in recorded.turns],
        rubric_version="x",
    )
    profile = profile_of(case_scenario, CONTRACT)
    assert [turn.kind for turn in profile.script] == ["goal", "revision"]
    by_value = {fact.value: fact for fact in profile.facts}
    assert by_value[old].release is Release.WHEN_ASKED
    assert (by_value[new].release, by_value[new].script_turn) == (Release.AT_TURN, 1)
    user_sim = ScriptedUser(profile, CONTRACT)
    assert user_sim.first().text == "Please send the invoice."
    # Asked before the revision: the old value (the new one is only given at its turn).
    asked = user_sim.next(session(user("Please send the invoice."), bot("Your e-mail?")))
    assert asked.text == f"It's {old}."
    revised = user_sim.next(session(user("x"), bot("Sending it now.")))
    assert revised.text == f"Actually, use {new} instead."
    again = user_sim.next(session(user("x"), bot("Which e-mail should I use?")))
    assert again.text == f"It's {new}."


def _case_turn(turn):
    from turnwatch.exporters.regressions.model import CaseTurn

    return CaseTurn(turn_id=turn.index + 1, role=turn.role, content=turn.text)


def user_for(case):
    return ScriptedUser(profile_of(scenario(case), CONTRACT), CONTRACT)


def test_confirmations_yes_only_for_what_the_recorded_user_authorised():
    simulated = user_for(address_case(3))
    simulated.first()
    asked = session(user("hi"), bot(f"Should I update the delivery address to {address(3)}?"))
    assert simulated.next(asked).text == "Yes, go ahead."
    refund = session(user("hi"), bot("Shall I issue a refund for this order?"))
    move = simulated.next(refund)
    assert move.text == DECLINE and move.notes == []
    # A confirmation that names no tool: the one authorisation, marked unsure.
    vague = simulated.next(session(user("hi"), bot("Shall I go ahead?")))
    assert vague.text == "Yes, go ahead."
    [note] = vague.notes
    assert note.kind == "unsure" and "names no tool" in note.reason
    # A user who authorised nothing declines everything.
    nothing = user_for(refund_case(4))
    nothing.first()
    assert nothing.next(session(user("x"), bot("Shall I go ahead?"))).text == DECLINE


def test_answers_from_private_state_and_says_where_it_is_unsure():
    simulated = user_for(address_case(5))
    simulated.first()
    move = simulated.next(session(user("hi"), bot("What is your order number?")))
    assert move.text == f"The order number is {order(5)}." and move.notes == []
    unknown = simulated.next(session(user("hi"), bot("What is your phone number?")))
    assert unknown.text == UNKNOWN_FACT
    [note] = unknown.notes
    assert note.kind == "unsure" and "PHONE_NUMBER" in note.reason
    unmapped = simulated.next(session(user("hi"), bot("Which colour was the parcel?")))
    assert unmapped.text == "Thanks, bye."
    assert "cannot map" in unmapped.notes[0].reason
    # Nothing of its own left to say and a question it cannot answer.
    final = simulated.next(session(user("hi"), bot("Which colour was the parcel?")))
    assert final.stop is StopReason.UNANSWERABLE and final.notes[0].kind == "unsure"


def test_stopping_rule():
    simulated = user_for(status_case(6))
    simulated.first()
    done = session(
        user("where?"),
        bot(None, call("record_resolution", {"outcome": "resolved"}, {"ok": True})),
        bot("It shipped."),
    )
    assert simulated.next(done).stop is StopReason.SUCCESS
    handed_over = session(user("?"), bot(None, call("handoff_to_human", {}, {"ok": True})))
    assert user_for(status_case(6)).next(handed_over).stop is StopReason.ESCALATED

    stubborn = user_for(address_case(9))
    stubborn.first()
    failing = session(
        user("x"),
        bot(None, call("lookup_order", {}, None, error="down")),
        bot("What is the order number?"),
    )
    moves = [stubborn.next(failing) for _ in range(3)]
    assert [move.stop for move in moves] == [None, None, StopReason.GAVE_UP]
    assert moves[0].text == f"The order number is {order(9)}."

    chatty = user_for(address_case(10))
    chatty.profile.stop.max_user_turns = 2
    chatty.first()
    assert chatty.next(session(user("x"), bot("What is the new address?"))).text
    assert chatty.next(session(user("x"), bot("Noted."))).stop is StopReason.TURN_BUDGET


def test_a_failure_after_the_simulator_was_unsure_is_the_simulators():
    def failed_at(*turns: int | None) -> Comparison:
        return Comparison(False, [], ["outcome"], [], [], False, list(turns))

    unsure = [SimulatorNote(turn_index=4, kind="unsure", reason="?")]
    assert attribute(failed_at(6), unsure) is RunOutcome.SIMULATOR
    assert attribute(failed_at(None), unsure) is RunOutcome.SIMULATOR
    assert attribute(failed_at(2, 6), unsure) is RunOutcome.FAILED
    assert attribute(failed_at(6), []) is RunOutcome.FAILED
    violation = [SimulatorNote(turn_index=9, kind="violation", reason="volunteered")]
    assert attribute(failed_at(2), violation) is RunOutcome.SIMULATOR
    passed = Comparison(True, [], [], [], [], True, [])
    assert attribute(passed, violation) is RunOutcome.PASSED


def replay(version: str, make_user, replayed) -> list:
    with serve(version) as target:
        client, scoring = ChatClient(target.url), Scoring(support_scorer())
        try:
            return replay_all([scenario(c) for c in replayed], client, scoring, make_user)
        finally:
            client.close()
            scoring.close()


def test_reworded_chatbot_fails_the_recorded_transcript_but_not_the_simulated_user():
    reworded = cases(addresses=4, refunds=0, statuses=0)
    recorded_v2 = replay("v2", recorded_user, reworded)
    simulated_v2 = replay("v2", scripted_user, reworded)
    assert [run.outcome for run in recorded_v2] == [RunOutcome.FAILED] * 4
    # The recorded user answers questions v2 no longer asks in that order: v2 asks again.
    assert all("near_duplicates (warning)" in run.new for run in recorded_v2)
    assert [run.outcome for run in simulated_v2] == [RunOutcome.PASSED] * 4
    assert {run.stop for run in simulated_v2} == {StopReason.SUCCESS}
    assert all(run.simulator_notes == [] for run in simulated_v2)


def test_the_simulated_user_never_volunteers_a_fact_before_it_is_asked():
    with serve("v2") as target:
        client, scoring = ChatClient(target.url), Scoring(support_scorer())
        [run] = replay_all([scenario(address_case(11))], client, scoring, scripted_user)
        client.close()
        scoring.close()
    turns = run.session.turns
    for position, turn in enumerate(turns):
        if turn.role.value != "user" or position == 0:
            continue
        asked = turns[position - 1].text or ""
        for match in TOKEN.finditer(turn.text or ""):
            wanted = {"ORDER_NUMBER": "order number", "STREET_ADDRESS": "address"}
            assert wanted[match.group(1)] in asked, (asked, turn.text)
    # It answered the reworded questions in the new version's order: order number first.
    assert order(11) in turns[2].text and address(11) in turns[4].text


def test_recorded_tool_results_answer_the_new_version_and_budgets_are_measured():
    [run] = replay("v1", scripted_user, [status_case(12)])
    calls = [call for turn in run.session.turns for call in turn.tool_calls]
    assert [(c.name, c.error) for c in calls] == [
        ("lookup_order", "timeout"),
        ("lookup_order", None),
        ("record_resolution", None),
    ]
    assert calls[1].result == {"status": "shipped"}
    assert run.outcome is RunOutcome.PASSED and run.stop is StopReason.SUCCESS
    assert run.score.budgets.input_tokens > 0 and run.score.budgets.latency_ms > 0
    assert all(t.model == "support-model" for t in run.session.turns if t.role.value == "assistant")
    assert ReplayOptions().repeat == 1


def test_scenario_files_in_the_dataset_schema_replay_and_bad_files_are_named(tmp_path, capsys):
    recorded = status_case(60)
    authored = {
        "conversation_id": "authored-status-1",
        "dataset_version": "expert-1",
        "scenario": "Order status while the order system fails once",
        "service": "support-bot",
        "slice": ["tool-failure"],
        "turns": [turn.model_dump(mode="json") for turn in recorded.turns],
        "rubric_version": "support-bot@1",
    }
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "status.json").write_text(json.dumps(authored))
    config = tmp_path / "turnwatch.yaml"
    config.write_text(f"scorers:\n  contracts_dir: {SUPPORT_CONTRACT.parent}\n")
    out = tmp_path / "runs.json"
    base = ["regressions", "--config", str(config), "--data-dir", str(tmp_path), "replay"]
    with serve("v1") as target:
        code = main([*base, "--target", target.url, "--scenario", str(folder), "--out", str(out)])
    assert code == 0, capsys.readouterr().out
    [run] = load_replay(out).runs
    assert (run.case_id, run.slices, run.outcome) == (
        "authored-status-1",
        ["tool-failure"],
        RunOutcome.PASSED,
    )
    for name, text, message in (
        ("broken.json", "{", "not readable JSON"),
        ("case.json", '{"case_id": "rc-1"}', "not a valid regression case: "),
        ("file.json", json.dumps({**authored, "turns": []}), "not a valid scenario file: turns"),
    ):
        (tmp_path / name).write_text(text)
        code = main([*base, "--target", "http://127.0.0.1:9", "--scenario", str(tmp_path / name)])
        assert code == 2 and message in capsys.readouterr().err
