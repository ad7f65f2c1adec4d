/**
 * The README's agent loop (clients/python/examples/agent_loop.py), runnable, with a stand-in
 * model and tool. Start `make run` in another terminal, then:
 *
 *     npm run example -- [HOST:PORT]
 *
 * The target is the argument, else POCKETD_TARGET, else 127.0.0.1:50051; the token is
 * POCKETD_TOKEN, if set. Exits non-zero when a call fails.
 */

import { randomUUID } from "node:crypto";

import { PocketdClient, type ModelUsage, type StepResponse, type ToolRun } from "../src/index.js";

/** A stand-in for the agent's model: its output, and the tokens in and out. */
function model(context: string): [string, number, number] {
  if (context.includes("Observation:")) {
    return ['{"type": "finish", "answer": "Your order shipped on Monday."}', 600, 20];
  }
  return ['{"type": "tool", "tool": "search", "params": {"q": "88123"}}', 400, 30];
}

/** A stand-in for the agent's tool. */
function search(params: Record<string, string>): string {
  return `Order ${params.q}: shipped Monday`;
}

const SEARCH = { name: "search", description: "Search orders. Returns the order's status." };

async function main(): Promise<void> {
  const target = process.argv[2] ?? process.env.POCKETD_TARGET ?? "127.0.0.1:50051";
  const client = new PocketdClient({ target, token: process.env.POCKETD_TOKEN || undefined });
  const budget = { totalMicros: 100_000, tools: { search: { costPerCallMicros: 500 } } };
  const taskId = `demo-${randomUUID().slice(0, 8)}`;
  try {
    const t = await client.task(taskId, budget, "alice", { goal: "Where is my order 88123?" });
    try {
      let action = "";
      let observation = "";
      let usage: ModelUsage[] = [];
      let toolResults: ToolRun[] = [];
      let plan: StepResponse | undefined;
      let answer = "";
      let rounds = 0;
      for (let n = 1; n <= 5; n++) {
        rounds = n;
        plan = await t.step(n, { action, observation, usage, toolResults, tools: [SEARCH] });
        const [raw, nIn, nOut] = model(plan.context); // the model, on pocketd's context and tier
        const act = (await t.step(n, { rawOutput: raw })).action; // the action, parsed and checked
        usage = [{ model: plan.model, inputTokens: nIn, outputTokens: nOut }];
        answer = act?.answer ?? "";
        if (act === undefined || act.type === "finish" || (plan.budget?.degradeLevel ?? 0) >= 4) {
          break;
        }
        const params = JSON.parse(act.paramsJson) as Record<string, string>;
        action = act.paramsJson;
        observation = act.cachedResult || search(params);
        toolResults = act.cached ? [] : [{ tool: "search", params, result: observation }];
      }
      console.log(`${answer} | tier: ${plan?.tier ?? ""} | rounds: ${rounds}`);
    } finally {
      const bill = await t.close();
      console.log(`spent: ${bill.status?.spentMicros ?? 0} micros`);
    }
  } finally {
    client.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
