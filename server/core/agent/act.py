"""The Step's action: the raw model output parsed (one retry per round); three identical actions
in a row are a loop, a warning and one step down the ladder (in the Step's closing transaction);
search_memory runs (active recall); a call of an idempotent tool with arguments seen before is
answered from the cache."""

from __future__ import annotations

from server.core.agent.action import ActionError, looping, parse
from server.core.agent.recall import Recaller
from server.core.agent.step_io import SEARCH_MEMORY, Round, StepOut
from server.core.agent.toolcache import ToolCache
from server.core.settings import AgentSettings


class Actor:
    def __init__(self, settings: AgentSettings, cache: ToolCache, recall: Recaller) -> None:
        self._s = settings
        self._cache = cache
        self._recall = recall

    def act(self, rd: Round, names: set[str], out: StepOut) -> None:
        """Parse the action into `out`; what it costs (a search, a cache lookup) is
        `out.step_cost`."""
        r, s = rd.r, rd.s
        rd.deadline.check("the Step (parsing the action)")
        try:
            action = parse(r.raw_model_output, names)
        except ActionError as e:
            # One retry per round: the first refused output may be tried again; the same output
            # sent again (a retried Step) is answered the same.
            refused = s.refused.setdefault(r.round, [])
            if r.raw_model_output not in refused:
                refused.append(r.raw_model_output)
            out.action_error, out.retry_action = str(e), refused[0] == r.raw_model_output
            return
        out.action = action
        s.actions[r.round] = action  # a retried Step replaces its round's action
        history = [s.actions[k] for k in sorted(s.actions)]
        if looping(history, self._s.loop_repeat):
            why = f"the same action {self._s.loop_repeat} times in a row: {action.signature()[:80]}"
            out.warnings.append(why)
            rd.loop = why  # stepped down in the Step's closing transaction
        if action.type != "tool":
            return
        if action.tool == SEARCH_MEMORY:
            query = str(action.params.get("query", ""))
            if query:
                out.memories, out.step_cost = self._recall(rd.ns, query, rd.deadline)
            return
        tb = s.tool_budgets.get(action.tool)  # this task must declare it cacheable itself
        if tb is None or not tb.idempotent or tb.cache_ttl_seconds <= 0:
            return
        hit = self._cache.get(rd.ns, action.tool, action.params, tb.cache_ttl_seconds)
        out.step_cost += self._s.cache_lookup_micros  # a hit costs the lookup, not the call
        if hit is not None:
            out.cached_result = hit.result
