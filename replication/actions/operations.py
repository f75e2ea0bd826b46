"""What each action that may need approval is, in one table: `OPERATIONS[action]`.

approvals.py and request_runs.py keep a request's life cycle (submit, approve, reject, withdraw;
expire, supersede, execute, settle) and look up here what differs by action: what the requester must
still be allowed to do, what the action names, its dry run, how it runs and how an approved run
settles. The work itself stays in the cutover modules (promote, reverse, restore, links,
merge_flows, subject_promotion); the functions here only call them. A new action is its
ApprovalRequest.Action, one row here, an action in policy.py if it needs one, a route and its
template.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from replication.actions import plan_words
from replication.actions.asked import Asked, Params
from replication.cutover import link_deletion, promote, restore, restore_plan, reverse, stop_batches
from replication.cutover.promote import TopicOutcome
from replication.governance import audit
from replication.models import ApprovalRequest, ClusterLink, MirrorTopic
from replication.schemas import subject_promotion
from replication.states.mirror_states import FOLLOWING
from replication.topics import merge_flows

Action = ApprovalRequest.Action


@dataclass
class Ran:
    """What running an action did: each mirror topic's outcome (a cutover goes on in the
    background), or, for one that is done when it returns, what was done in words."""

    outcomes: list[TopicOutcome] = field(default_factory=list)
    done: str = ""


def _nothing_recorded(params: Params) -> Params:
    return {}


@dataclass(frozen=True)
class Operation:
    """One action that may need approval: its facts and the plain functions it runs with."""

    # What the requester must still be allowed to do (a policy.POLICY action) when it runs.
    requested_as: str
    # Whether it must name at least one mirror topic (promote, failover, reverse, restore).
    names_mirrors: bool
    # Whether it acts on `params` instead of topics (any topics named are dropped).
    takes_params: bool
    # The params as kept on the request, normalised (unknown keys dropped, defaults filled in).
    params: Callable[[ClusterLink, Params], Params]
    # What the audit trail names as its target.
    target: Callable[[Asked], str]
    # What it would do now, per mirror topic (a refusal of the whole is raised): the dry run
    # shown when asking and to approvers, at request time and now.
    plan: Callable[[Asked], list[TopicOutcome]]
    # Run it (or, validating, check that it could run) as `actor`, with the audit trail's note.
    run: Callable[[audit.Actor, Asked, str, bool], Ran]
    # What it does in words: the clusters, the direction, each topic's fate, which topics'
    # producers and consumer groups matter, the objects it names (plans.py's plan).
    explain: Callable[[Asked], plan_words.Explained]
    # Its dry run first runs it validate-only: its plan does not say whether it could run.
    validated_by_running: bool = False
    # Whether a topic's refusal in the plan refuses the request (a forced link deletion's plan
    # is what it fails over: a mirror that cannot fail over does not stop the deletion).
    plan_errors_refuse: bool = True
    # An approved run that goes on in the background is done once none of its mirrors is
    # under way and each is in one of these states; empty: done when `run` returns.
    done_states: frozenset[str] = frozenset()
    # How the settled result starts: "Stopped: orders, payments."
    done_word: str = ""
    # The cutover module's `finish(link)`, which moves its stored steps on.
    finish: Callable[[ClusterLink], None] | None = None
    # What the request's audit snapshot adds from its params.
    recorded: Callable[[Params], Params] = _nothing_recorded
    # Whether an admin may break glass on it (act at once whatever the link's policy).
    break_glass: bool = False
    # It acts on the old source of a failed-over mirror, on the other half of the link.
    on_old_source: bool = False


# --- what each action names ------------------------------------------------------------------


def _no_params(link: ClusterLink, params: Params) -> Params:
    return {}


def _gateway(link: ClusterLink, params: Params) -> Params:
    """A cutover's one param: the gateway whose clients follow it, if it names one
    (gateway_moves.py)."""
    name = str(params.get("gateway") or "").strip()
    return {"gateway": name} if name else {}


def _flow_to_create(link: ClusterLink, params: Params) -> Params:
    """The flow's name filled in as merge_flows.create_flow would choose it."""
    source = str(params.get("source_topic") or "")
    return {
        "flow": params.get("flow") or f"{link.name}.{source}",
        "source_topic": source,
        "destination_topic": params.get("destination_topic") or source,
        "mapping": params.get("mapping") or None,
    }


def _flow_to_delete(link: ClusterLink, params: Params) -> Params:
    return {"flow": str(params.get("flow") or "")}


def _subjects(link: ClusterLink, params: Params) -> Params:
    """Each subject once."""
    return {"subjects": list(dict.fromkeys(params.get("subjects") or ()))}


def _mirrors_target(asked: Asked) -> str:
    """The mirror topic acted on, or the link (the request's `topics` lists them all)."""
    if len(asked.topics) == 1:
        return f"mirror {asked.topics[0]}"
    if asked.topics:
        return f"{len(asked.topics)} mirror topics of link {asked.link.name}"
    return f"link {asked.link.name}"


def _link_target(asked: Asked) -> str:
    return f"link {asked.link.name}"


def _flow_target(asked: Asked) -> str:
    return f"merge flow {asked.params['flow']} on link {asked.link.name}"


def _subjects_target(asked: Asked) -> str:
    return f"schema subjects of link {asked.link.name}"


def _flow_recorded(params: Params) -> Params:
    return {"flow": params}


def _params_recorded(params: Params) -> Params:
    return dict(params)


# --- dry runs ----------------------------------------------------------------------------------


def _stop_plan(asked: Asked) -> list[TopicOutcome]:
    return promote.check(asked.action, asked.link, asked.topics)


def _reverse_plan(asked: Asked) -> list[TopicOutcome]:
    return reverse.check(asked.link, asked.topics)


def _restore_plan(asked: Asked) -> list[TopicOutcome]:
    return list(restore_plan.check(asked.link, asked.topics))


def _forced_failovers(asked: Asked) -> list[TopicOutcome]:
    """What a forced deletion of the link fails over and makes writable: the failover dry run
    of each of its mirrors not yet stopped, on both halves of a bidirectional link (nothing
    without `force`)."""
    return link_deletion.forced_failovers(asked.link) if asked.force else []


def _no_plan(asked: Asked) -> list[TopicOutcome]:
    """No per-topic plan: the request says what it does."""
    return []


# --- runs --------------------------------------------------------------------------------------


def _stop(actor: audit.Actor, asked: Asked, note: str, validate_only: bool) -> Ran:
    return Ran(
        promote.stop_mirrors(
            actor, asked.link, asked.topics, asked.action, validate_only=validate_only, note=note
        )
    )


def _reverse(actor: audit.Actor, asked: Asked, note: str, validate_only: bool) -> Ran:
    return Ran(
        reverse.reverse_mirrors(
            actor, asked.link, asked.topics, asked.action, validate_only=validate_only, note=note
        )
    )


def _restore(actor: audit.Actor, asked: Asked, note: str, validate_only: bool) -> Ran:
    outcomes = restore.truncate_and_restore(
        actor, asked.link, asked.topics, validate_only=validate_only, note=note
    )
    return Ran(list(outcomes))


def _delete_link(actor: audit.Actor, asked: Asked, note: str, validate_only: bool) -> Ran:
    link_deletion.delete_link(actor, asked.link, force=asked.force, validate_only=validate_only)
    return Ran(done=f"Deleted link {asked.link.name}.")


def _create_flow(actor: audit.Actor, asked: Asked, note: str, validate_only: bool) -> Ran:
    params = asked.params
    flow = merge_flows.create_flow(
        actor,
        asked.link,
        params["source_topic"],
        params["destination_topic"],
        name=params["flow"],
        mapping=params["mapping"],
        validate_only=validate_only,
    )
    return Ran(
        done=f"Created merge flow {flow.name}: {flow.source_topic} into {flow.destination_topic}."
    )


def _delete_flow(actor: audit.Actor, asked: Asked, note: str, validate_only: bool) -> Ran:
    flow = merge_flows.get_flow(asked.link, asked.params["flow"])
    if not validate_only:
        merge_flows.delete_flow(actor, flow)
    return Ran(done=f"Deleted merge flow {flow.name}; {flow.destination_topic} stays.")


def _promote_subjects(actor: audit.Actor, asked: Asked, note: str, validate_only: bool) -> Ran:
    subjects = asked.params["subjects"]
    return Ran(
        done=subject_promotion.promote_subjects(
            actor, asked.link, subjects, validate_only=validate_only
        )
    )


# --- the table ---------------------------------------------------------------------------------

_STOPPED = frozenset({MirrorTopic.State.STOPPED})

_PROMOTE = Operation(
    requested_as="mirror.stop",
    names_mirrors=True,
    takes_params=False,
    params=_gateway,
    target=_mirrors_target,
    plan=_stop_plan,
    run=_stop,
    explain=plan_words.promote_words,
    done_states=_STOPPED,
    done_word="Stopped",
    finish=stop_batches.finish_pending_stops,
    recorded=_params_recorded,
)
_REVERSE = replace(
    _PROMOTE,
    plan=_reverse_plan,
    run=_reverse,
    finish=reverse.finish,
    explain=plan_words.reverse_words,
)

_CREATE_FLOW = Operation(
    requested_as="flow.manage",
    names_mirrors=False,
    takes_params=True,
    params=_flow_to_create,
    target=_flow_target,
    plan=_no_plan,
    run=_create_flow,
    explain=plan_words.create_flow_words,
    validated_by_running=True,
    recorded=_flow_recorded,
)

OPERATIONS: dict[str, Operation] = {
    Action.PROMOTE: _PROMOTE,
    Action.FAILOVER: replace(_PROMOTE, break_glass=True, explain=plan_words.failover_words),
    Action.DELETE_LINK: Operation(
        requested_as="link.delete",
        names_mirrors=False,
        takes_params=False,
        params=_no_params,
        target=_link_target,
        plan=_forced_failovers,
        run=_delete_link,
        explain=plan_words.delete_link_words,
        validated_by_running=True,
        plan_errors_refuse=False,
    ),
    Action.REVERSE_AND_START: _REVERSE,
    Action.REVERSE_AND_PAUSE: _REVERSE,
    Action.TRUNCATE_AND_RESTORE: replace(
        _PROMOTE,
        plan=_restore_plan,
        run=_restore,
        explain=plan_words.restore_words,
        done_states=FOLLOWING,  # a restore ends with a mirror again
        done_word="Restored",
        finish=restore.finish,
        on_old_source=True,
    ),
    Action.CREATE_FLOW: _CREATE_FLOW,
    Action.DELETE_FLOW: replace(
        _CREATE_FLOW,
        params=_flow_to_delete,
        run=_delete_flow,
        explain=plan_words.delete_flow_words,
    ),
    Action.PROMOTE_SUBJECTS: Operation(
        requested_as="mirror.stop",  # as a promote: producers move to the destination
        names_mirrors=False,
        takes_params=True,
        params=_subjects,
        target=_subjects_target,
        plan=_no_plan,
        run=_promote_subjects,
        explain=plan_words.promote_subjects_words,
        validated_by_running=True,
        recorded=_params_recorded,
    ),
}
