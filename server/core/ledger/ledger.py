"""The budget ledger of an agent task: reserve, then commit or release, in micro-units.

Every call is one unit of work in a store transaction (`LedgerStore.run`): what it checks is
what it holds, with no other writer in between, so concurrent reservations can never overspend,
and what is committed is durable before the call answers. (The store may commit the work of
several calls together, each in its own savepoint: one fsync for many calls.)

Limits, checked on each Reserve against what is spent plus what is held:
- `total`: an ordinary reservation may use the total less the emergency share
  (`emergency_ratio`), which only a `final` reservation (the final answer) may use;
- `round`: the round's spent and held amounts, with `round_micros`;
- `rounds`: the round number, with `max_rounds`;
- `tool:NAME`: the tool's calls, committed and held, with its `max_calls`.
A refusal is RESOURCE_EXHAUSTED naming the limit. A hold that is not committed or released by
`expires_at` no longer counts. A commit records the actual amount, even after its hold expired
(the money was spent; the late commit is a warning).

The degrade ladder (seed 000 §3.2, 001 §3.1): as the ordinary budget's spent and held share
crosses `warn_at_percent`, `cheaper_tier_at_percent` and `tools_off_at_percent`, the task's level
moves to 1 (warned), 2 (a cheaper model tier), 3 (optional tools off); an ordinary reservation the
ordinary budget cannot pay, once its use has reached `tools_off_at_percent`, moves it to 4, the
`failover` action. Under `Failover.PAUSE` the task
is paused: ordinary reservations are refused until `raise_budget` resumes it. The level never
goes back down, except by `raise_budget`, which recomputes it.

Idempotency: each mutating call names a key; a retry with the same key and the same request
returns the first answer without applying it again, and the same key with another request is
refused. Refusals are not recorded: a retried refusal is checked again.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from server.core.clock import Clock
from server.core.errors import (
    FailedPreconditionError,
    FieldViolation,
    InvalidArgumentError,
    Location,
    NotFoundError,
    ResourceExhaustedError,
)
from server.core.ledger.model import (
    Bill,
    Budget,
    Charge,
    Charged,
    Failover,
    HeldSum,
    Hold,
    KindBill,
    LimitState,
    Reservation,
    SpendKind,
    Status,
    Task,
    ToolBudget,
)
from server.core.ledger.ports import LedgerStore, LedgerTx
from server.core.metrics import Metrics, NoMetrics
from server.core.settings import LedgerSettings
from server.core.tenancy import tenant_of

T = TypeVar("T")
MAX_MICROS = 10**15  # any one amount, and a task's total (SQLite integers are signed 64-bit)
# Where a task's booked sums stop growing: the sum of all of them stays within a signed 64-bit
# integer (the task is msgpack, its holds SQLite rows).
MAX_TOTAL = 10**17
LEVELS = ("normal", "warned", "cheaper model tier", "optional tools off", "failover")


class Ledger:
    def __init__(
        self,
        store: LedgerStore,
        clock: Clock,
        settings: LedgerSettings,
        metrics: Metrics | None = None,
    ) -> None:
        """`metrics`: where reservations granted and refused are counted (by tenant)."""
        self._store = store
        self._clock = clock
        self._s = settings
        self._metrics: Metrics = metrics or NoMetrics()

    def open_task(self, task_id: str, namespace: str, session_id: str, budget: Budget) -> Status:
        """Open a task; opening it again with the same budget returns its status."""
        now = self._clock.now()

        def work(tx: LedgerTx) -> Status:
            task = tx.task(task_id)
            if task is not None:
                if task.budget != budget or task.namespace != namespace:
                    raise FailedPreconditionError(
                        f"task {task_id!r} is already open with another budget or namespace",
                        "TASK_EXISTS",
                        Location("task_id"),
                    )
                return self._status(task)
            task = Task(task_id, namespace, session_id, budget, now)
            tx.put_task(task)
            return self._status(task)

        return self._store.run(work)

    def reserve(
        self,
        task_id: str,
        round_: int,
        kind: SpendKind,
        estimate: int,
        tool: str,
        final: bool,
        ttl: float,
        key: str,
    ) -> Reservation:
        now = self._clock.now()
        request = (task_id, round_, int(kind), estimate, tool, final, ttl)

        replayed = False

        def work(tx: LedgerTx) -> Reservation | ResourceExhaustedError:
            nonlocal replayed
            done = self._replayed(tx, task_id, key, request, Reservation)
            replayed = done is not None
            if done is not None:
                return done
            task = self._open(tx, task_id, now)
            if task.state == "paused" and not final:
                raise FailedPreconditionError(
                    f"task {task_id!r} is paused ({task.stop_reason}); raise its budget to resume",
                    "TASK_PAUSED",
                    Location("task_id"),
                )
            if round_ < task.round:
                raise FailedPreconditionError(
                    f"round {round_} is behind the task's round {task.round}",
                    "ROUND_BEHIND",
                    Location("round"),
                )
            b = task.budget
            amount = estimate
            if kind == SpendKind.TOOL_CALL and amount == 0:
                amount = b.tools.get(tool, _NO_TOOL).cost_per_call_micros
            live = task.live()
            refused = self._refusal(task, live, round_, tool, amount, final)
            if refused is None:
                hold = Hold(
                    "r-" + secrets.token_hex(8),
                    task_id,
                    round_,
                    kind,
                    tool,
                    amount,
                    final,
                    now,
                    now + ttl,
                )
                tx.put_hold(hold)
                task.add_hold(hold)
                task.round = max(task.round, round_)
                self._climb(task)
                tx.put_task(task)
                out = Reservation(hold.reservation_id, amount, hold.expires_at, self._status(task))
                self._record(tx, task_id, key, request, out)
                return out
            used = task.spent + sum(h.amount for h in live if not h.final)
            nearly_spent = used * 100 >= b.ordinary_micros * self._steps(b)[2]
            if refused.limit == "total" and not final and nearly_spent:
                # The budget is as good as spent: the failover. (One estimate too large for a
                # task with room left is only refused.)
                self._fail_over(task, str(refused))
            tx.put_task(task)  # the ladder's move is kept though the call is refused
            return refused

        out = self._store.run(work)
        if not replayed:  # a retry answered from the stored reply is no new reservation
            refused = out.limit if isinstance(out, ResourceExhaustedError) else ""
            self._metrics.reservation(tenant_of(task_id), refused)
        if isinstance(out, ResourceExhaustedError):
            raise out
        return out

    def open_round(
        self,
        task_id: str,
        round_: int,
        charges: Sequence[Charge],
        tools: Sequence[str] = (),
        whole: tuple[str, object] | None = None,
        admit: Callable[[], None] | None = None,
    ) -> Callable[[], Charged]:
        """A Step's opening transaction: record spends that already happened (a model call's
        reported usage as `charges`, a tool the agent ran as its name in `tools`, priced at the
        task's own per-call price), all at once: no limit can refuse them, but they move the
        ladder. Each is idempotent by its key, like every call (one already booked is
        skipped). Without charges it reads the task (its expired holds dropped). Returns the
        task's namespace, session, budget and status after them (so a task's first Step learns
        where the task lives in this same transaction). NOT_FOUND for a task never opened,
        FAILED_PRECONDITION for a closed one. The transaction is queued at once
        (`LedgerStore.start`) and the returned function waits for it, so a caller may do other
        work meanwhile. `whole`: (key, request) of the batch as one request (a Step's
        reports): a retry of it books nothing again, even at other prices, and the same key
        with another request is FAILED_PRECONDITION naming `idempotency_key`. `admit`: the
        caller's own checks, run once the task is found open and before anything is booked
        (what it raises undoes the transaction)."""
        now = self._clock.now()

        def work(tx: LedgerTx) -> Charged:
            task = tx.task(task_id)
            if task is None:
                raise NotFoundError("task", task_id, Location("task_id"))
            if task.state == "closed":
                raise FailedPreconditionError(
                    f"task {task_id!r} is closed", "TASK_CLOSED", Location("task_id")
                )
            changed = self._expire(tx, task, now)
            if admit is not None:
                admit()
            retried = False
            if whole is not None:
                retried = self._replayed(tx, task_id, whole[0], whole[1], object) is not None
                if not retried:
                    self._record(tx, task_id, whole[0], whole[1], True)
            priced = [
                Charge(
                    SpendKind.TOOL_CALL,
                    task.budget.tools.get(t, _NO_TOOL).cost_per_call_micros,
                    t,
                    "",
                    keyed=False,
                )
                for t in tools
            ]
            batch = [*charges, *priced]
            for c in () if retried else batch:
                request = ("charge", task_id, round_, int(c.kind), c.amount, c.tool)
                if c.keyed and self._replayed(tx, task_id, c.key, request, object) is not None:
                    continue
                self._charge(task, round_, c)
                if c.keyed:
                    self._record(tx, task_id, c.key, request, True)
                changed = True
            if batch:
                changed |= self._past_limits(task, round_)
            if changed:
                tx.put_task(task)
            return Charged(task.namespace, task.session_id, task.budget, self._status(task))

        return self._store.start(work)

    def close_round(
        self,
        task_id: str,
        round_: int,
        own: int,
        down: tuple[str, str] | None = None,
    ) -> Status:
        """A Step's closing transaction, all at once: one step down the degrade ladder (`down`:
        (why, key) of a loop, with its reason as a warning; once per key: a retried Step does
        not step down again) and pocketd's own work (`own` micros, new work each time it runs,
        so nothing is recorded under a key). The status after them."""
        now = self._clock.now()

        def work(tx: LedgerTx) -> Status:
            task = self._open(tx, task_id, now)
            if down is not None:
                self._step_down(tx, task, *down)
            if own:
                self._charge(task, round_, Charge(SpendKind.MEMORY, own, "", "", keyed=False))
                self._past_limits(task, round_)
            tx.put_task(task)
            return self._status(task)

        return self._store.run(work)

    def commit(self, task_id: str, reservation_id: str, actual: int, key: str) -> Status:
        return self._settle(task_id, reservation_id, actual, key, commit=True)

    def release(self, task_id: str, reservation_id: str, key: str) -> Status:
        return self._settle(task_id, reservation_id, 0, key, commit=False)

    def namespace_of(self, task_id: str) -> str | None:
        """The namespace a task was opened in; None when there is no such task."""

        def work(tx: LedgerTx) -> str | None:
            task = tx.task(task_id)
            return None if task is None else task.namespace

        return self._store.run(work)

    def status(self, task_id: str) -> Status:
        now = self._clock.now()

        def work(tx: LedgerTx) -> Status:
            task = tx.task(task_id)
            if task is None:
                raise NotFoundError("task", task_id, Location("task_id"))
            if self._expire(tx, task, now):
                tx.put_task(task)  # with its expired holds dropped
            return self._status(task)

        return self._store.run(work)

    def raise_budget(self, task_id: str, add: int, key: str) -> Status:
        now = self._clock.now()
        if add <= 0 or add > MAX_MICROS:
            raise InvalidArgumentError(
                [FieldViolation("add_total_micros", f"must be 1 to {MAX_MICROS}")]
            )

        def work(tx: LedgerTx) -> Status:
            done = self._replayed(tx, task_id, key, ("raise", task_id, add), Status)
            if done is not None:
                return done
            task = self._open(tx, task_id, now)
            if task.budget.total_micros + add > MAX_MICROS:
                raise FailedPreconditionError(
                    f"the total would pass {MAX_MICROS} micros",
                    "BUDGET_TOO_LARGE",
                    Location("add_total_micros"),
                )
            task.budget = msgspec.structs.replace(
                task.budget, total_micros=task.budget.total_micros + add
            )
            if task.state == "paused":
                task.state, task.stop_reason = "open", ""
                _warn(task, f"resumed: the total was raised by {add} micros")
            task.level = 0
            self._climb(task)
            tx.put_task(task)
            out = self._status(task)
            self._record(tx, task_id, key, ("raise", task_id, add), out)
            return out

        return self._store.run(work)

    def close_task(self, task_id: str, key: str) -> Bill:
        now = self._clock.now()

        def work(tx: LedgerTx) -> Bill:
            done = self._replayed(tx, task_id, key, ("close", task_id), Bill)
            if done is not None:
                return done
            task = self._open(tx, task_id, now)
            tx.release_all(task_id)
            task.held.clear()
            task.state, task.closed_at = "closed", now
            tx.put_task(task)
            out = Bill(
                self._status(task),
                [
                    KindBill(SpendKind(k), v, task.commits_by_kind.get(k, 0))
                    for k, v in sorted(task.spent_by_kind.items())
                ],
                {
                    t: KindBill(SpendKind.TOOL_CALL, task.spent_by_tool.get(t, 0), n)
                    for t, n in sorted(task.calls_by_tool.items())
                },
            )
            self._record(tx, task_id, key, ("close", task_id), out)
            return out

        return self._store.run(work)

    # -- inside a transaction

    def _charge(self, task: Task, round_: int, c: Charge) -> None:
        _book(task, c.kind, round_, c.tool, c.amount)
        task.round = max(task.round, round_)
        self._climb(task)

    def _step_down(self, tx: LedgerTx, task: Task, why: str, key: str) -> None:
        """One step down the ladder (loop detection), once per `key`."""
        request = ("down", task.task_id, why)
        if self._replayed(tx, task.task_id, key, request, Status) is not None:
            return
        if task.level < 4:
            task.level += 1
            _warn(task, f"{LEVELS[task.level]}: {why}")
            if task.level == 4:
                self._fail_over(task, why)
        self._record(tx, task.task_id, key, request, self._status(task))

    def _settle(
        self, task_id: str, reservation_id: str, actual: int, key: str, commit: bool
    ) -> Status:
        now = self._clock.now()
        request = ("commit" if commit else "release", task_id, reservation_id, actual)

        def work(tx: LedgerTx) -> Status:
            done = self._replayed(tx, task_id, key, request, Status)
            if done is not None:
                return done
            task = self._open(tx, task_id, now)
            hold = tx.hold(reservation_id)
            if hold is None or hold.task_id != task_id:
                raise NotFoundError("reservation", reservation_id, Location("reservation_id"))
            if hold.state in ("committed", "released"):
                raise FailedPreconditionError(
                    f"reservation {reservation_id!r} is already {hold.state}",
                    "RESERVATION_SETTLED",
                    Location("reservation_id"),
                )
            if hold.state == "held":
                task.add_hold(hold, -1)
            elif not commit:  # expired: nothing is held any more, so nothing to release
                tx.put_task(task)  # with the holds this call found expired
                out = self._status(task)
                self._record(tx, task_id, key, request, out)
                return out
            hold.state = "committed" if commit else "released"
            if commit:
                hold.actual = actual
                _book(task, hold.kind, hold.round, hold.tool, actual)
                if hold.expires_at <= now:  # expired: late, but the money was spent
                    _warn(task, f"reservation {reservation_id} was committed after it expired")
                if actual > hold.amount:
                    _warn(
                        task,
                        f"reservation {reservation_id} cost {actual} micros, "
                        f"{actual - hold.amount} more than it held",
                    )
            tx.put_hold(hold)
            self._climb(task)
            tx.put_task(task)
            out = self._status(task)
            self._record(tx, task_id, key, request, out)
            return out

        return self._store.run(work)

    def _open(self, tx: LedgerTx, task_id: str, now: float) -> Task:
        task = self._task(tx, task_id, now)
        if task.state == "closed":
            raise FailedPreconditionError(
                f"task {task_id!r} is closed", "TASK_CLOSED", Location("task_id")
            )
        return task

    def _task(self, tx: LedgerTx, task_id: str, now: float) -> Task:
        """The task, with the holds that expired by `now` no longer counted."""
        task = tx.task(task_id)
        if task is None:
            raise NotFoundError("task", task_id, Location("task_id"))
        self._expire(tx, task, now)
        return task

    def _expire(self, tx: LedgerTx, task: Task, now: float) -> bool:
        """Stop counting the task's holds that expired by `now`; whether there were any."""
        gone = tx.expire(task.task_id, now)
        for h in gone:
            task.add_hold(h, -1)
        return bool(gone)

    def _refusal(
        self, task: Task, live: list[HeldSum], round_: int, tool: str, amount: int, final: bool
    ) -> ResourceExhaustedError | None:
        b = task.budget
        held = sum(h.amount for h in live)
        if b.max_rounds and round_ > b.max_rounds:
            return ResourceExhaustedError(
                f"round {round_} is beyond the task's {b.max_rounds} rounds", "rounds"
            )
        # Every reservation fits the total; an ordinary one also fits the ordinary budget with
        # the other ordinary holds (a final answer's hold uses the emergency share, not this).
        ordinary_held = sum(h.amount for h in live if not h.final)
        for cap, in_use, what in (
            (b.total_micros, held, "total budget"),
            (
                b.ordinary_micros if not final else b.total_micros,
                ordinary_held if not final else held,
                "ordinary budget (the emergency share is kept for the final answer)",
            ),
        ):
            if task.spent + in_use + amount > cap:
                return ResourceExhaustedError(
                    f"{amount} micros would bring spent {task.spent} + held {in_use} past the "
                    f"{what} of {cap}",
                    "total",
                )
        if b.round_micros:
            in_round = task.spent_by_round.get(round_, 0)
            in_round += sum(h.amount for h in live if h.round == round_)
            if in_round + amount > b.round_micros:
                return ResourceExhaustedError(
                    f"{amount} micros would bring round {round_} past its {b.round_micros}",
                    "round",
                )
        limits = b.tools.get(tool)
        if tool and limits is not None and limits.max_calls:
            calls = task.calls_by_tool.get(tool, 0) + sum(h.count for h in live if h.tool == tool)
            if calls + 1 > limits.max_calls:
                return ResourceExhaustedError(
                    f"tool {tool!r} has made or holds {calls} of its {limits.max_calls} calls",
                    f"tool:{tool}",
                )
        finals = sum(h.count for h in live if h.final)
        if final and finals >= self._s.max_final_holds:
            return ResourceExhaustedError(
                f"the task holds {finals} final-answer reservations; ledger.max_final_holds is"
                f" {self._s.max_final_holds} (the emergency share is for one final answer)",
                "final",
            )
        return None

    def _climb(self, task: Task) -> None:
        """Move up the ladder to the level the ordinary budget's use calls for."""
        b = task.budget
        used = task.spent + sum(h.amount for h in task.live() if not h.final)
        share = 100.0 * used / b.ordinary_micros if b.ordinary_micros else 100.0
        warn, cheaper, tools_off = self._steps(b)
        level = next((n for n, at in ((3, tools_off), (2, cheaper), (1, warn)) if share >= at), 0)
        if task.spent >= b.ordinary_micros:  # spent, not held: a hold may still be released
            level = 4
        while task.level < level:
            task.level += 1
            _warn(task, f"{LEVELS[task.level]}: spent and held {share:.0f}% of the ordinary budget")
            if task.level == 4:
                self._fail_over(task, f"the ordinary budget is used up ({share:.0f}%)")

    def _steps(self, b: Budget) -> tuple[int, int, int]:
        """The ladder's thresholds in order, whatever the task's warn_at_percent: a task that
        warns at 95 % goes to the cheaper tier at 95 % too, never to "warned" from a later
        step's threshold, and fails over on a refusal only from its own tools-off step."""
        warn = b.warn_at_percent
        cheaper = max(self._s.cheaper_tier_at_percent, warn)
        return warn, cheaper, max(self._s.tools_off_at_percent, cheaper)

    def _past_limits(self, task: Task, round_: int) -> bool:
        """Spend that happened cannot be refused, but a loop driven by Step alone must still
        meet the task's limits: a round beyond `max_rounds` is the failover, a round past
        `round_micros` a warning (once). Whether the task changed."""
        b = task.budget
        if b.max_rounds and round_ > b.max_rounds and task.level < 4:
            self._fail_over(task, f"round {round_} is beyond the task's {b.max_rounds} rounds")
            return True
        spent = task.spent_by_round.get(round_, 0)
        said = f"round {round_} spent "
        over = bool(b.round_micros) and spent > b.round_micros
        if over and not any(w.startswith(said) for w in task.warnings):
            _warn(task, f"{said}{spent} of its {b.round_micros} micros")
            return True
        return False

    def _fail_over(self, task: Task, why: str) -> None:
        if task.level < 4:
            task.level = 4
            _warn(task, f"failover: {why}")
        if task.budget.failover == Failover.PAUSE and task.state == "open":
            task.state, task.stop_reason = "paused", why

    def _status(self, task: Task) -> Status:
        live = task.live()
        b = task.budget
        held = sum(h.amount for h in live)
        ordinary_held = sum(h.amount for h in live if not h.final)
        in_round = [h for h in live if h.round == task.round]
        limits = [
            LimitState("total", b.total_micros, task.spent, held),
            LimitState("ordinary", b.ordinary_micros, task.spent, ordinary_held),
        ]
        if b.round_micros:
            limits.append(
                LimitState(
                    "round",
                    b.round_micros,
                    task.spent_by_round.get(task.round, 0),
                    sum(h.amount for h in in_round),
                )
            )
        if b.max_rounds:
            limits.append(LimitState("rounds", b.max_rounds, task.round, 0))
        for name, t in sorted(b.tools.items()):
            if t.max_calls:
                calls = sum(h.count for h in live if h.tool == name)
                limits.append(
                    LimitState(f"tool:{name}", t.max_calls, task.calls_by_tool.get(name, 0), calls)
                )
        failover = b.failover if b.failover != Failover.UNSPECIFIED else Failover.SOFT_STOP
        return Status(
            task.task_id,
            task.state,
            task.round,
            limits,
            task.level,
            failover,
            list(task.warnings),
            task.stop_reason,
            task.spent,
            held,
        )

    def _replayed(
        self, tx: LedgerTx, task_id: str, key: str, request: object, kind: type[T]
    ) -> T | None:
        got = tx.reply(f"{task_id}\0{key}")
        if got is None:
            return None
        fingerprint, answer = got
        if fingerprint != _fingerprint(request):
            raise FailedPreconditionError(
                f"idempotency key {key!r} was used for another request",
                "IDEMPOTENCY_KEY_REUSED",
                Location("idempotency_key"),
            )
        return msgspec.msgpack.decode(answer, type=kind)

    def _record(self, tx: LedgerTx, task_id: str, key: str, request: object, out: object) -> None:
        tx.put_reply(f"{task_id}\0{key}", _fingerprint(request), msgspec.msgpack.encode(out))


_NO_TOOL = ToolBudget()
MAX_WARNINGS = 16  # a task keeps its newest warnings: its status (and each reply) stays small


def _warn(task: Task, text: str) -> None:
    task.warnings.append(text)
    del task.warnings[:-MAX_WARNINGS]


def _book(task: Task, kind: SpendKind, round_: int, tool: str, amount: int) -> None:
    """Add a spend to the task's totals by kind, round and tool, each saturating at
    `MAX_TOTAL` (a charge cannot be refused, so many of them could pass a 64-bit integer)."""
    k = int(kind)
    task.spent_by_kind[k] = _add(task.spent_by_kind.get(k, 0), amount)
    task.commits_by_kind[k] = _add(task.commits_by_kind.get(k, 0), 1)
    task.spent_by_round[round_] = _add(task.spent_by_round.get(round_, 0), amount)
    if tool:
        task.calls_by_tool[tool] = _add(task.calls_by_tool.get(tool, 0), 1)
        task.spent_by_tool[tool] = _add(task.spent_by_tool.get(tool, 0), amount)


def _add(total: int, amount: int) -> int:
    return min(total + amount, MAX_TOTAL)


def _fingerprint(request: object) -> str:
    return hashlib.blake2b(msgspec.msgpack.encode(request), digest_size=16).hexdigest()
