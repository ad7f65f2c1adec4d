// Command agent_loop is the README's agent loop in Go, runnable, with a stand-in model and tool
// (the same loop as clients/python/examples/agent_loop.py).
//
// Start `make run` in another terminal, then, in clients/go:
//
//	go run ./examples/agent_loop [HOST:PORT]
//
// The target is the argument, else POCKETD_TARGET, else 127.0.0.1:50051; the bearer token, if
// the server wants one, is POCKETD_TOKEN.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	pocketd "github.com/pocketd/pocketd/clients/go"
	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
)

// searchTool is the agent's one tool schema.
const searchTool = `{"name": "search", "description": "Search orders. Returns the order's status."}`

// model stands in for the agent's model: its output, and the tokens in and out.
func model(prompt string) (string, uint64, uint64) {
	if strings.Contains(prompt, "Observation:") {
		return `{"type": "finish", "answer": "Your order shipped on Monday."}`, 600, 20
	}
	return `{"type": "tool", "tool": "search", "params": {"q": "88123"}}`, 400, 30
}

// search stands in for the agent's tool.
func search(paramsJSON string) (string, error) {
	var params struct{ Q string }
	if err := json.Unmarshal([]byte(paramsJSON), &params); err != nil {
		return "", fmt.Errorf("search params %s: %w", paramsJSON, err)
	}
	return fmt.Sprintf("Order %s: shipped Monday", params.Q), nil
}

// result is what the loop ended with.
type result struct {
	answer, tier string
	rounds       uint32
}

// loop runs the task's rounds, at most five: each a Step for the plan (tier and context), the
// model, and a second Step that parses its output into the action.
func loop(ctx context.Context, t *pocketd.Task) (result, error) {
	var r result
	next := &pb.StepRequest{ToolsJson: []string{searchTool}}
	for n := uint32(1); n <= 5; n++ {
		next.Round = n
		plan, err := t.Step(ctx, next)
		if err != nil {
			return r, err
		}
		raw, in, out := model(plan.GetContext()) // the model, on pocketd's context and tier
		parsed, err := t.Step(ctx, &pb.StepRequest{Round: n, RawModelOutput: raw})
		if err != nil {
			return r, err
		}
		act := parsed.GetAction() // the same round: the action, parsed and checked
		r = result{act.GetAnswer(), plan.GetTier(), n}
		if act.GetType() == "finish" || plan.GetBudget().GetDegradeLevel() >= 4 {
			break
		}
		obs := act.GetCachedResult() // a cacheable call answered by pocketd
		if obs == "" {
			if obs, err = search(act.GetParamsJson()); err != nil {
				return r, err
			}
		}
		next = &pb.StepRequest{
			PreviousActionJson: act.GetParamsJson(),
			Observation:        obs,
			Usage:              []*pb.ModelUsage{{Model: plan.GetModel(), InputTokens: in, OutputTokens: out}},
			ToolsJson:          []string{searchTool},
		}
		if !act.GetCached() { // the tool ran: charge it
			next.ToolResults = []*pb.ToolResult{{Tool: "search", ParamsJson: act.GetParamsJson(), Result: obs}}
		}
	}
	return r, nil
}

func run(ctx context.Context, target string) error {
	c, err := pocketd.Dial(target, pocketd.Options{Token: os.Getenv("POCKETD_TOKEN")})
	if err != nil {
		return err
	}
	defer c.Close()
	budget := &pb.TaskBudget{
		TotalMicros: 100_000,
		Tools:       map[string]*pb.ToolBudget{"search": {CostPerCallMicros: 500}},
	}
	t, err := c.OpenTask(ctx, pocketd.TaskSpec{
		ID:        "demo-" + strings.ToLower(rand.Text()[:8]),
		Namespace: "alice",
		Goal:      "Where is my order 88123?",
		Budget:    budget,
	})
	if err != nil {
		return err
	}
	r, err := loop(ctx, t)
	bill, closeErr := t.Close(ctx) // closed whatever the loop did: its holds are released
	if err := errors.Join(err, closeErr); err != nil {
		return err
	}
	fmt.Println(r.answer, "| tier:", r.tier, "| rounds:", r.rounds)
	fmt.Println("spent:", bill.GetStatus().GetSpentMicros(), "micros")
	return nil
}

func main() {
	target := os.Getenv("POCKETD_TARGET")
	if len(os.Args) > 1 {
		target = os.Args[1]
	}
	if target == "" {
		target = "127.0.0.1:50051"
	}
	if err := run(context.Background(), target); err != nil {
		log.Fatal(err)
	}
}
