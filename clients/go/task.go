package pocketd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/protobuf/proto"
)

// TaskSpec names an agent task and its budget.
type TaskSpec struct {
	// ID is chosen by the caller: 1 to 128 of [A-Za-z0-9._:-].
	ID string
	// Namespace is the memory namespace the task recalls from and is charged for.
	Namespace string
	// SessionID is the task's session, if any.
	SessionID string
	// Goal is sent with every Step (the first Step needs one).
	Goal string
	// Budget is the task's limits (TotalMicros is required).
	Budget *pb.TaskBudget
}

// Task is an open agent task: its budget's reservations (reserve, then commit or release), its
// rounds (Step) and, once closed, its bill. Every call carries a fresh idempotency key and is
// retried with that same key (see RetryPolicy), so a retry never charges twice. A refused
// reservation is an *Error with RESOURCE_EXHAUSTED and the limit in its QuotaViolations.
// A Task is not meant for concurrent use.
type Task struct {
	// ID and Goal are the task's (TaskSpec).
	ID, Goal string
	// Bill is the final bill, once Close has returned it.
	Bill *pb.TaskBill

	c     *Client
	round uint32
}

// Charge is what a reservation holds.
type Charge struct {
	// Kind is what it pays for (model input or output tokens, a tool call, memory).
	Kind pb.SpendKind
	// Micros is the estimate to hold; for a tool call 0 means the tool's cost_per_call_micros.
	Micros uint64
	// Tool is the tool a SPEND_KIND_TOOL_CALL calls (its cap applies).
	Tool string
	// Final marks the final answer, which may use the emergency share.
	Final bool
	// TTL is how long the hold lasts (whole seconds; 0: the server's, 300 s).
	TTL time.Duration
}

// OpenTask opens the task (or finds it open with the same budget) at round 1; Close it when
// done.
func (c *Client) OpenTask(ctx context.Context, spec TaskSpec) (*Task, error) {
	req := &pb.OpenTaskRequest{
		TaskId: spec.ID, Namespace: spec.Namespace, SessionId: spec.SessionID, Budget: spec.Budget,
	}
	if _, err := invoke(ctx, c, unavailableOrTimeout, c.timeout, c.ledger.OpenTask, req); err != nil {
		return nil, err
	}
	return &Task{ID: spec.ID, Goal: spec.Goal, c: c, round: 1}, nil
}

// Round is the task's current round, from 1: the one Reserve charges.
func (t *Task) Round() uint32 { return t.round }

// NextRound moves the task to its next round and returns it.
func (t *Task) NextRound() uint32 {
	t.round++
	return t.round
}

// Reserve holds ch against every limit of the task, in this round.
func (t *Task) Reserve(ctx context.Context, ch Charge) (*pb.Reservation, error) {
	req := &pb.ReserveRequest{
		TaskId:         t.ID,
		Round:          t.round,
		Kind:           ch.Kind,
		EstimateMicros: ch.Micros,
		Tool:           ch.Tool,
		Final:          ch.Final,
		TtlSeconds:     uint32(ch.TTL / time.Second),
		IdempotencyKey: newKey(),
	}
	return taskCall(ctx, t, t.c.ledger.Reserve, req)
}

// Commit records what a held reservation actually cost.
func (t *Task) Commit(ctx context.Context, r *pb.Reservation, actualMicros uint64) (*pb.TaskStatus, error) {
	req := &pb.CommitRequest{
		TaskId: t.ID, ReservationId: r.GetReservationId(), ActualMicros: actualMicros,
		IdempotencyKey: newKey(),
	}
	return taskCall(ctx, t, t.c.ledger.Commit, req)
}

// Release drops a held reservation.
func (t *Task) Release(ctx context.Context, r *pb.Reservation) (*pb.TaskStatus, error) {
	req := &pb.ReleaseRequest{
		TaskId: t.ID, ReservationId: r.GetReservationId(), IdempotencyKey: newKey(),
	}
	return taskCall(ctx, t, t.c.ledger.Release, req)
}

// Spend reserves ch, runs work, and commits what work says it cost; when work fails (or
// panics) it releases the hold instead and returns work's error.
func (t *Task) Spend(
	ctx context.Context, ch Charge, work func(context.Context) (actualMicros uint64, err error),
) (*pb.TaskStatus, error) {
	r, err := t.Reserve(ctx, ch)
	if err != nil {
		return nil, err
	}
	settled := false
	defer func() {
		if !settled { // work panicked: drop the hold on the way out
			_, _ = t.Release(context.WithoutCancel(ctx), r)
		}
	}()
	actual, err := work(ctx)
	settled = true
	if err != nil {
		// Released even when ctx was cancelled, under the client's own deadline.
		_, rerr := t.Release(context.WithoutCancel(ctx), r)
		return nil, errors.Join(err, rerr)
	}
	return t.Commit(ctx, r, actual)
}

// Status is the task's spent, held and remaining amounts per limit, its round and degrade
// level.
func (t *Task) Status(ctx context.Context) (*pb.TaskStatus, error) {
	return taskCall(ctx, t, t.c.ledger.Status, &pb.TaskStatusRequest{TaskId: t.ID})
}

// RaiseBudget adds to the task's total (and resumes a paused task).
func (t *Task) RaiseBudget(ctx context.Context, addMicros uint64) (*pb.TaskStatus, error) {
	req := &pb.RaiseBudgetRequest{TaskId: t.ID, AddTotalMicros: addMicros, IdempotencyKey: newKey()}
	return taskCall(ctx, t, t.c.ledger.RaiseBudget, req)
}

// Step is AgentService.Step for req.Round: the task's id, its goal (unless req has one) and a
// fresh idempotency key (unless req has one) are filled in on a copy of req. Usage are the
// model calls since the last Step, ToolResults the tools run; a round's second Step, with only
// RawModelOutput, parses the model's answer into the Action. At degrade level 4 the answer
// carries a Failover plan.
func (t *Task) Step(ctx context.Context, req *pb.StepRequest) (*pb.StepResponse, error) {
	req = proto.CloneOf(req)
	req.TaskId = t.ID
	if req.Goal == "" {
		req.Goal = t.Goal
	}
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = newKey()
	}
	t.round = max(t.round, req.Round)
	return taskCall(ctx, t, t.c.agent.Step, req)
}

// Close closes the task (its holds are released), keeps its bill in Bill and returns it.
func (t *Task) Close(ctx context.Context) (*pb.TaskBill, error) {
	req := &pb.CloseTaskRequest{TaskId: t.ID, IdempotencyKey: newKey()}
	bill, err := taskCall(ctx, t, t.c.ledger.CloseTask, req)
	if err == nil {
		t.Bill = bill
	}
	return bill, err
}

// taskCall invokes a call of t: a read, or a request with its idempotency key, so it is retried
// on UNAVAILABLE and after an attempt's own deadline.
func taskCall[Req, Resp any](ctx context.Context, t *Task, call rpc[Req, Resp], req Req) (Resp, error) {
	return invoke(ctx, t.c, unavailableOrTimeout, t.c.timeout, call, req)
}

// newKey is a fresh idempotency key: 128 random bits, in hex.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}
