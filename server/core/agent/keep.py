"""What a Step keeps: the previous round (the action, the observation, what the user said), and
as memories: the observation when it is a key event (`keyevents`), and every input the user
gives, as an episode of its session (the hot session memory), or as the user's preference, a
fact, a correction, by what the `said` head reads in it. An input of several sentences is read
sentence by sentence ("The fan grinds. Oh, and from now on use phone only. What can I try?"
says three things): the whole input is kept as an episode, and each span of consecutive
sentences the head reads as a preference, a fact or a correction (or likelier a preference than
anything else) is kept apart as one (`spans`). A memory gets its id here; once the Step has
closed, the memory engine's intake keeps it durable and writes it off the call
(`MemoryEngine.acknowledge`)."""

from __future__ import annotations

import secrets

from server.core.agent.context import Recalled, Summaries, Turn, focus_words, is_id
from server.core.agent.keyevents import events, failed, should_commit
from server.core.agent.ports import Memory
from server.core.agent.recall import MILESTONES, OUTCOME
from server.core.agent.said import Reading, Said, SaidHead
from server.core.agent.step_io import Round
from server.core.memory.acknowledged import Pending
from server.core.memory.model import Kind, Record, Source
from server.core.memory.summarise import split_sentences
from server.core.memory.write.dedup import identifiers
from server.core.settings import AgentSettings
from server.core.tenancy import tenant_of

# Spans of one input kept apart, at most (the first: an input of a thousand sentences is not a
# thousand memories).
SPANS_KEPT = 8
# What the user said is kept as: its `said` reading first in the memory's reasons (`why`).
USER_KINDS = {"preference": Kind.PREFERENCE, "fact": Kind.FACT}


def why(reading: Reading | None, image: bool) -> list[str]:
    """A user's input's reasons to be kept, which say its kind: `preference` or `fact` first
    (a correction is kept as the kind it corrects, and tagged so), `said` otherwise (an
    episode), with `maybe-preference` when a preference is likelier than anything else but
    below its floor; `medium` when it brings an image."""
    out = ["said"]
    if reading is not None and reading.said != Said.OTHER:
        kind = "preference" if reading.kept_as_preference() else "fact"
        out = [kind, "correction"] if reading.said == Said.CORRECTION else [kind]
    elif reading is not None and reading.likeliest == Said.PREFERENCE:
        out.append("maybe-preference")
    return out + (["medium"] if image else [])


class Keeper:
    def __init__(
        self,
        settings: AgentSettings,
        engine: Memory,
        summaries: Summaries,
        memory_tokens: int,
        said: SaidHead | None,
        max_query_chars: int,
    ) -> None:
        """`memory_tokens`: a memory's gist, which its vector is encoded from. `said`: reads
        a user's input (None: every input is kept as an episode)."""
        self._s = settings
        self._engine = engine
        self._summaries = summaries
        self._memory_tokens = memory_tokens
        self._said = said
        self._max_query = max_query_chars

    def remember(self, rd: Round, text: str, why: list[str], user: bool = False) -> str:
        """A memory for the engine's intake once the Step has closed, under an id chosen here,
        which the Step returns; "" when memory cannot store it (said in the warnings). What
        the user said (`user`) is an episode of the session, or the user's preference or a
        fact (its first reason, `why`); a tool's output saying "going forward, please …" is an
        observation. A milestone (a stage completed, an error fixed) is encoded with the task's
        goal: found later by what it did."""
        if not rd.storable:
            rd.unstored.append(text)
            return ""
        mid = f"m-{secrets.token_hex(8)}"  # 64 random bits: in a prompt, 128 cost 12 tokens more
        kind = USER_KINDS.get(why[0], Kind.EPISODE) if user and why else Kind.OBSERVATION
        rec = Record(
            memory_id=mid,
            namespace=rd.s.namespace,
            kind=kind,
            session_id=rd.s.session_id,
            text=text,
            tags=tuple(f"key:{w}" for w in why),
            source=Source(round=rd.r.round, task_id=rd.r.task_id),
            importance=4,
            speaker="user" if user else "",
        )
        gist = self._summaries(text, self._memory_tokens, part=tenant_of(rd.r.task_id))
        if MILESTONES.intersection(why):
            gist = f"{rd.s.goal} {gist}"
        rd.writes.append(Pending(rec, gist))
        return mid

    def previous(self, rd: Round) -> None:
        """Note the previous round (its action, observation and what the user said then), and
        keep its observation when it is a key event."""
        r, s = rd.r, rd.s
        old = not s.fresh(r.round - 1)
        if not (r.previous_action or r.observation) or r.round - 1 in s.noted or old:
            return
        s.noted.add(r.round - 1)
        user = s.inputs.get(r.round - 1, "")
        s.turns.append(Turn(r.round - 1, r.previous_action, r.observation, user))
        found = events(r.observation, r.observation_has_media, s.previous_failed)
        if should_commit(found, self._s.commit_threshold):
            mid = self.remember(rd, r.observation, [e.kind for e in found])
            if mid:
                rd.committed.append(mid)
                s.stored[r.round - 1] = mid  # its full text, if the context shortens it
                rd.cost += self._s.remember_micros
        s.previous_failed = failed(r.observation)

    def outcome(self, rd: Round, answer: str) -> None:
        """The task's outcome, kept when the agent finishes (`answer`), once a round (a retried
        finish keeps none again): what the answer rests on, the observation of this task naming
        the most of the answer's identifiers (the newest of those naming as many; none when the
        answer names none that was observed), with the task's goal, tagged `outcome` and the
        task's id: a later task of the user reads how this one ended (`Recaller.outcomes`), not
        every log that said "done" along the way."""
        s = rd.s
        if rd.r.round in s.finished:
            return
        s.finished.add(rd.r.round)
        ids = {w for w in focus_words(answer) if is_id(w)}
        best, named = "", 0
        for t in s.turns:  # oldest first: the newest wins a tie
            n = len(ids & focus_words(t.observation))
            if n and n >= named:
                best, named = t.observation, n
        if not best:
            return
        text = f"Task: {s.goal}\nOutcome: {best}"
        mid = self.remember(rd, text, [OUTCOME])
        if mid:
            rd.committed.append(mid)
            rd.cost += self._s.remember_micros

    def user_said(self, rd: Round) -> None:
        """What the user says, kept every round (after the recall: this round's input is the
        query, not one of its answers): as one memory of the kind the head reads in it, or,
        when it has several sentences, as an episode and each span that says something apart
        (`spans`: the channel and, in the next sentence, its code stay together). The episode
        reads as the whole input does when no span says anything.
        What joins the user's profile is also held in the task's state (`Session.said`) and
        shown every round, written or not."""
        r, s = rd.r, rd.s
        if not (r.input and r.round not in s.inputs and s.fresh(r.round)):
            return
        s.inputs[r.round] = r.input
        whole, units = self._read(rd) if rd.storable else ((r.input, None), [])
        said = r.input[: self._max_query]
        apart = [(text, why(reading, False)) for text, reading in spans(said, units)]
        apart = [(text, reasons) for text, reasons in apart if reasons != ["said"]][:SPANS_KEPT]
        first = why(None if apart else whole[1], r.input_has_image)
        for text, reasons in [(r.input, first), *apart]:
            mid = self._keep(rd, text, reasons)
            if mid and _in_profile(reasons) and self._s.profile_top_k:
                m = Recalled(mid, text, 1.0, "unspecified", 0.7, self._engine.now())
                hold(s.said, (m, reasons[0] == "preference"), self._s.profile_top_k)

    def _keep(self, rd: Round, text: str, reasons: list[str]) -> str:
        mid = self.remember(rd, text, reasons, user=True)
        if mid:
            rd.committed.append(mid)
            rd.cost += self._s.remember_micros
        return mid

    def _read(
        self, rd: Round
    ) -> tuple[tuple[str, Reading | None], list[tuple[str, Reading | None]]]:
        """What the whole input says (`said`), and, when it has several sentences, what each
        says; on their vectors as queries: the input's is the one this round's Recall encoded
        (cut to the query limit), the sentences' are encoded in one batch (and cached: the
        memory kept of one is not encoded again unless `memory.embed_speaker` asks for its
        speaker in the text). Without a head, nothing is read."""
        said = rd.r.input[: self._max_query]
        if self._said is None:
            return (rd.r.input, None), []
        units = split_sentences(said)
        texts = [said, *units] if len(units) > 1 else [said]
        vectors = self._engine.query_vectors(rd.s.namespace, texts, rd.deadline)
        readings = [self._said.read(t, v) for t, v in zip(texts, vectors, strict=True)]
        return (rd.r.input, readings[0]), list(zip(texts[1:], readings[1:], strict=True))


def spans(said: str, units: list[tuple[str, Reading | None]]) -> list[tuple[str, Reading | None]]:
    """Consecutive sentences of `said` the head finds likeliest the same thing (a preference,
    a fact, a correction) joined into one span, as the user wrote it, read as its most
    confident sentence: "Please make sms my default channel." and "The code is PREF-SMS-1."
    say one preference. A preference's span that names no identifier (a code, a number) also
    takes the one sentence after it that is likeliest other and names one, since a statement's
    code follows it and may read as nothing alone ("以后所有工单都请用chat联系我。"
    "代码是PREF-CHAT-776。"); "Thanks." or the round's own next sentence stays out. Any other
    sentence likeliest other stands alone."""
    out: list[tuple[str, Reading | None]] = []
    run: list[tuple[int, int, Reading]] = []
    at = 0
    tail = -1  # where the last span starts, if a preference's without a code (it may take one)

    def close() -> None:
        nonlocal tail
        if run:
            best = max(run, key=lambda u: u[2].p if u[2].said != Said.OTHER else -1.0)
            out.append((said[run[0][0] : run[-1][1]], best[2]))
            preference = run[0][2].likeliest == Said.PREFERENCE
            coded = preference and identifiers(said[run[0][0] : run[-1][1]])
            tail = run[0][0] if preference and not coded else -1
            run.clear()

    for text, reading in units:
        start = said.find(text, at)
        start = at if start < 0 else start
        at = start + len(text)
        label = None if reading is None else reading.likeliest
        if reading is None or label == Said.OTHER:
            close()
            if tail >= 0 and reading is not None and identifiers(text):  # a preference's code
                out[-1] = (said[tail:at], out[-1][1])
            else:
                out.append((text, reading))
            tail = -1
            continue
        if run and run[-1][2].likeliest != label:
            close()
        run.append((start, at, reading))
    close()
    return out


def hold(said: list[tuple[Recalled, bool]], m: tuple[Recalled, bool], size: int) -> None:
    """A task's own profile entry (a memory, and whether it is a believed preference rather
    than a "maybe"), at most `size` of them: a newer one pushes out the oldest "maybe" first,
    then the oldest."""
    said.append(m)
    while len(said) > size:
        maybe = [x for x in said if not x[1]]
        said.remove(maybe[0] if maybe else said[0])


def _in_profile(reasons: list[str]) -> bool:
    """Whether a user's input kept for `reasons` is one the profile reads (`recall.PROFILE`)."""
    return reasons[0] == "preference" or "maybe-preference" in reasons
