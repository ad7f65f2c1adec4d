package pocketd_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	pocketd "github.com/pocketd/pocketd/clients/go"
	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// These tests run against a real server at POCKETD_TARGET (with POCKETD_TOKEN if it wants
// one), and are skipped without it; tests/e2e/test_client_go.py starts one and runs them.

// live is a client of the server at POCKETD_TARGET, and a namespace of this test's own.
func live(t *testing.T) (*pocketd.Client, string) {
	t.Helper()
	target := os.Getenv("POCKETD_TARGET")
	if target == "" {
		t.Skip("POCKETD_TARGET is not set: no server to test against")
	}
	// A loaded machine's first calls load the encoder: more than the default 5 s.
	c, err := pocketd.Dial(target, pocketd.Options{
		Token: os.Getenv("POCKETD_TOKEN"), Timeout: 60 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, "go-" + strings.ToLower(rand.Text()[:10])
}

func TestLiveRememberRecall(t *testing.T) {
	c, ns := live(t)
	ctx := pocketd.WithRequestID(context.Background(), "go-live-remember")
	req := pocketd.NewMemory(ns, "Alice only uses Android phones")
	req.Record.Kind = pb.MemoryKind_MEMORY_KIND_PREFERENCE
	stored, err := c.Remember(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if stored.GetDecision() != pb.GateDecision_GATE_DECISION_STORED || stored.GetMemoryId() == "" {
		t.Fatalf("Remember: %v", stored)
	}
	res, err := c.Recall(ctx, &pb.RecallRequest{Namespace: ns, QueryText: "Android phones", TopK: proto.Int32(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetHits()) == 0 || res.GetHits()[0].GetRecord().GetMemoryId() != stored.GetMemoryId() {
		t.Fatalf("Recall did not find %s first: %v", stored.GetMemoryId(), res.GetHits())
	}
	got, err := c.Get(ctx, &pb.GetRequest{Namespace: ns, MemoryId: stored.GetMemoryId()})
	if err != nil || got.GetText() != "Alice only uses Android phones" {
		t.Fatalf("Get: %v, %v", got, err)
	}
	n, err := c.Forget(ctx, &pb.ForgetRequest{Namespace: ns, Target: &pb.ForgetRequest_MemoryId{MemoryId: got.GetMemoryId()}})
	if err != nil || n != 1 {
		t.Fatalf("Forget: %d, %v", n, err)
	}
}

func TestLiveBadRequestNamesTheField(t *testing.T) {
	c, ns := live(t)
	_, err := c.Recall(context.Background(), &pb.RecallRequest{Namespace: ns, QueryText: "x", TopK: proto.Int32(0)})
	var e *pocketd.Error
	if !errors.As(err, &e) || e.Code != codes.InvalidArgument {
		t.Fatalf("got %v, want INVALID_ARGUMENT", err)
	}
	if why, ok := e.Field("top_k"); !ok || why == "" {
		t.Errorf("no violation of top_k in %v", e.FieldViolations)
	}
}

func TestLiveTask(t *testing.T) {
	c, ns := live(t)
	ctx := context.Background()
	task, err := c.OpenTask(ctx, pocketd.TaskSpec{
		ID: ns + "-task", Namespace: ns, Goal: "Where is my order 88123?",
		Budget: &pb.TaskBudget{TotalMicros: 100_000, Tools: map[string]*pb.ToolBudget{
			"search": {CostPerCallMicros: 500},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := task.Reserve(ctx, pocketd.Charge{Kind: pb.SpendKind_SPEND_KIND_MODEL_INPUT_TOKENS, Micros: 1200})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := task.Commit(ctx, r, 800); err != nil || st.GetSpentMicros() != 800 {
		t.Fatalf("Commit: %v, %v", st, err)
	}
	search := pocketd.Charge{Kind: pb.SpendKind_SPEND_KIND_TOOL_CALL, Tool: "search"}
	if _, err := task.Spend(ctx, search, func(context.Context) (uint64, error) { return 500, nil }); err != nil {
		t.Fatal(err)
	}
	_, err = task.Reserve(ctx, pocketd.Charge{Kind: pb.SpendKind_SPEND_KIND_MODEL_OUTPUT_TOKENS, Micros: 10_000_000})
	var e *pocketd.Error
	if !errors.As(err, &e) || e.Code != codes.ResourceExhausted || len(e.QuotaViolations) == 0 {
		t.Fatalf("a reservation over the budget: %v, want RESOURCE_EXHAUSTED with a QuotaFailure", err)
	}
	step, err := task.Step(ctx, &pb.StepRequest{Round: 1, Input: "Where is my order 88123?"})
	if err != nil {
		t.Fatal(err)
	}
	if step.GetTier() == "" || step.GetBudget() == nil {
		t.Errorf("Step: %v", step)
	}
	bill, err := task.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bill.GetStatus().GetState() != "closed" || bill.GetStatus().GetSpentMicros() < 1300 {
		t.Errorf("bill: %v", bill)
	}
}

func TestLiveLifecycle(t *testing.T) {
	c, ns := live(t)
	ctx := context.Background()
	old := pocketd.NewMemory(ns, "The product price is 3.2 dollars")
	old.Record.Topic = "pricing"
	stored, err := c.Remember(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	fact := &pb.AuthoritativeFact{Text: "The product price is 4.0 dollars", Topic: "pricing"}
	dry, err := c.Reconcile(ctx, &pb.ReconcileRequest{Namespace: ns, Facts: []*pb.AuthoritativeFact{fact}, DryRun: true})
	if err != nil || dry.GetApplied() || len(dry.GetFactIds()) != 0 {
		t.Fatalf("a dry run: %v, %v", dry, err)
	}
	done, err := c.Reconcile(ctx, &pb.ReconcileRequest{Namespace: ns, Facts: []*pb.AuthoritativeFact{fact}})
	if err != nil || !done.GetApplied() || len(done.GetFactIds()) != 1 {
		t.Fatalf("Reconcile: %v, %v", done, err)
	}
	got, err := c.Get(ctx, &pb.GetRequest{Namespace: ns, MemoryId: stored.GetMemoryId()})
	if err != nil || !got.GetObsolete() || got.GetSupersedeReason() != "reconcile" {
		t.Fatalf("the contradicted memory: %v, %v", got, err)
	}
	restored, err := c.Unsupersede(ctx, ns, []string{stored.GetMemoryId()})
	if err != nil || len(restored) != 1 || restored[0] != stored.GetMemoryId() {
		t.Fatalf("Unsupersede: %v, %v", restored, err)
	}
	_, err = c.EndSession(ctx, ns, "no-such-session")
	var e *pocketd.Error
	if !errors.As(err, &e) || e.Code != codes.NotFound {
		t.Fatalf("EndSession of an unknown session: %v, want NOT_FOUND", err)
	}
	if why, ok := e.Field("session_id"); !ok || why == "" {
		t.Errorf("no violation of session_id in %v", e.FieldViolations)
	}
	if _, err := c.Maintain(ctx, ns); err != nil {
		t.Fatalf("Maintain: %v", err)
	}
}

// TestLiveMedia remembers a tiny screenshot (testdata/error-e1234.png: "Refund failed: E1234"
// in DejaVu Sans, 300 × 48 px), waits until the server has read it, and finds it by its code.
func TestLiveMedia(t *testing.T) {
	c, ns := live(t)
	ctx := context.Background()
	shot, err := os.ReadFile("testdata/error-e1234.png")
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.RememberImage(ctx, ns, shot, pocketd.WithSession("s1"), pocketd.WaitProcessed())
	if err != nil {
		t.Fatal(err)
	}
	if r.GetDecision() != pb.GateDecision_GATE_DECISION_STORED ||
		r.GetProcessingState() != pb.ProcessingState_PROCESSING_STATE_READY {
		t.Fatalf("RememberImage: %v", r)
	}
	res, err := c.Recall(ctx, &pb.RecallRequest{Namespace: ns, QueryText: "error code E1234", TopK: proto.Int32(5)})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.GetHits(), func(h *pb.RecallHit) bool {
		return h.GetRecord().GetMemoryId() == r.GetMemoryId() || slices.Contains(h.GetGroupMemberIds(), r.GetMemoryId())
	})
	if i < 0 || !strings.Contains(res.GetHits()[i].GetRecord().GetText(), "E1234") {
		t.Fatalf("Recall did not find the screenshot %s by its code: %v", r.GetMemoryId(), res.GetHits())
	}
	got, err := c.Get(ctx, &pb.GetRequest{Namespace: ns, MemoryId: r.GetMemoryId(), IncludeBlobData: true})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(shot)
	b := got.GetBlob()
	if !bytes.Equal(b.GetData(), shot) || b.GetMimeType() != "image/png" || b.GetSha256() != hex.EncodeToString(sum[:]) ||
		got.GetModality() != pb.Modality_MODALITY_IMAGE {
		t.Fatalf("Get: the blob is %s %s (%d bytes), modality %v", b.GetMimeType(), b.GetSha256(), len(b.GetData()), got.GetModality())
	}
}
