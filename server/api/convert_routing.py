"""Explain's answer, from the core's routing decisions to protobuf messages."""

from __future__ import annotations

from pocketd.v1 import memory_service_pb2 as spb
from server.api.convert import recall_response, timestamp
from server.core.routing.explain import Explained
from server.core.routing.router import Context
from server.core.tenancy import Tenant


def route_features(ctx: Context) -> spb.RouteFeatures:
    f = ctx.features
    full = {s.pocket: s.cost_units for s in ctx.full}
    m = ctx.measures
    out = spb.RouteFeatures(
        flags=sorted(f.flags),
        terms=list(f.terms),
        identifiers=list(f.identifiers),
        safety=list(f.safety),
        image=f.image,
    )
    for i, (p, h) in enumerate(zip(ctx.pockets, ctx.heuristic, strict=True)):
        pf = out.pockets.add(
            pocket=p.name,
            size=p.size,
            method=p.method,
            full_cost_units=full.get(p.name, 0.0),
            centroid_cosine=m.cosine[i],
            radius=p.radius,
            term_documents=m.docs[i],
            heuristic_probability=h,
            store=m.stores[i],
            intent_probability=-1.0 if m.intent[i] is None else m.intent[i],
        )
        timestamp(p.oldest, pf.oldest)
        timestamp(p.newest, pf.newest)
    out.vector = ctx.vector is not None
    for intent, sim in ctx.similarity.items():
        out.intents.add(
            intent=intent,
            similarity=sim,
            probability=ctx.evidence.intents.get(intent, 0.0),
            readout=ctx.evidence.readout.get(intent, 0.0),
        )
    if ctx.evidence.window is not None:
        timestamp(ctx.evidence.window[0], out.window_start)
        timestamp(ctx.evidence.window[1], out.window_end)
    return out


def explain_response(
    ctx: Context, explained: list[Explained], tenant: Tenant
) -> spb.ExplainResponse:
    out = spb.ExplainResponse(features=route_features(ctx))
    for e in explained:
        d = e.decision
        pe = out.policies.add(
            policy=d.asked,
            ran=d.policy,
            widened=d.widened,
            rules=d.rules,
            model_version=d.model,
            steps=[
                spb.PlannedStep(
                    pocket=s.pocket,
                    depth=s.depth,
                    probability=s.probability,
                    cost_units=s.cost_units,
                )
                for s in d.steps
            ],
            scores=d.scores,
            cost_units=d.cost_units,
            full_cost_units=d.full_cost_units,
            budget_units=ctx.budget,
            skip_below=ctx.skip_below,
            searched_steps=e.searched_steps,
        )
        if e.result is not None:
            pe.result.CopyFrom(recall_response(e.result, tenant))
    return out
