// Package pocketd is the Go client of pocketd, the memory and cost-control sidecar for LLM
// agents: MemoryService's calls on a Client, and an agent task's budget (LedgerService) and
// rounds (AgentService) on a Task.
//
// It mirrors the Python client (clients/python/pocketd): every call has a deadline (Timeout,
// 5 s, unless its context has one), the calls that are safe to repeat are retried on
// UNAVAILABLE (see RetryPolicy), and a failure is an *Error with the server's rich details.
// Requests and responses are the generated messages of package pocketdv1
// (github.com/pocketd/pocketd/clients/go/pocketd/v1); Conn gives the connection for the calls
// this package does not wrap.
//
//	c, err := pocketd.Dial("127.0.0.1:50051", pocketd.Options{Token: os.Getenv("POCKETD_TOKEN")})
//	if err != nil { ... }
//	defer c.Close()
//	_, err = c.Remember(ctx, pocketd.NewMemory("alice", "Alice only uses Android phones"))
//	res, err := c.Recall(ctx, &pocketdv1.RecallRequest{Namespace: "alice", QueryText: "phone"})
//
// Media (screenshots, voice notes, tables) go in with RememberImage, RememberAudio and
// RememberTable, and an image can be the query with RecallByImage (media.go).
package pocketd

import (
	"context"
	"time"

	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/grpc"
)

// BatchTimePerItem is how much a RememberBatch's (and a Reconcile's) deadline grows per item:
// the server encodes a few hundred texts a second on two cores, so a fixed deadline would fail
// a large import.
const BatchTimePerItem = 50 * time.Millisecond

// MaintainTimeout is the least a Maintain waits (a run may take a while, and one under way is
// waited for): the server's own cap on a call, server.max_call_seconds, by default.
const MaintainTimeout = 60 * time.Second

// Client is a connection to pocketd. It is safe for concurrent use; Close it when done.
type Client struct {
	conn    *grpc.ClientConn
	memory  pb.MemoryServiceClient
	ledger  pb.LedgerServiceClient
	agent   pb.AgentServiceClient
	timeout time.Duration
	retry   RetryPolicy
}

// Dial makes a Client for target ("host:port", or any gRPC target). It does not wait for the
// connection: the first call does. It fails for unusable Options, among them a Token over
// plaintext to a non-loopback target (ErrInsecureToken).
func Dial(target string, opts Options) (*Client, error) {
	dialOpts, err := opts.dialOptions(target)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, err
	}
	c := &Client{
		conn:    conn,
		memory:  pb.NewMemoryServiceClient(conn),
		ledger:  pb.NewLedgerServiceClient(conn),
		agent:   pb.NewAgentServiceClient(conn),
		timeout: opts.Timeout,
		retry:   opts.Retry,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.retry.MaxAttempts <= 0 {
		c.retry = DefaultRetry
	}
	return c, nil
}

// Conn is the client's connection, for the generated stubs of the calls not wrapped here
// (AgentService.CompressTools, StepBatch).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// NewMemory is a request to remember text in namespace as a fact, the defaults of the Python
// client's MemoryInput; set the Record's other fields (Kind, Tags, Importance, ...) as needed.
func NewMemory(namespace, text string) *pb.RememberRequest {
	return &pb.RememberRequest{Record: &pb.MemoryRecord{
		Namespace: namespace,
		Text:      text,
		Kind:      pb.MemoryKind_MEMORY_KIND_FACT,
		Modality:  pb.Modality_MODALITY_TEXT,
	}}
}

// Remember stores one memory if the write gate lets it through. A request that waits for its
// medium to be read (WaitProcessed) waits at least MediaWaitTimeout. It is not retried.
func (c *Client) Remember(ctx context.Context, req *pb.RememberRequest) (*pb.RememberResponse, error) {
	return invoke(ctx, c, never, writeTimeout(c.timeout, req), c.memory.Remember, req)
}

// RememberBatch stores many memories in one transaction, with one result per item, in order.
// Its deadline grows with the batch (BatchTimePerItem), and is at least MediaWaitTimeout when
// an item waits for its medium to be read; it is not retried.
func (c *Client) RememberBatch(ctx context.Context, items []*pb.RememberRequest) ([]*pb.RememberResponse, error) {
	timeout := writeTimeout(max(c.timeout, time.Duration(len(items))*BatchTimePerItem), items...)
	req := &pb.RememberBatchRequest{Items: items}
	resp, err := invoke(ctx, c, never, timeout, c.memory.RememberBatch, req)
	return resp.GetResults(), err
}

// Recall is the hybrid search (vector and BM25, fused, with time decay).
func (c *Client) Recall(ctx context.Context, req *pb.RecallRequest) (*pb.RecallResponse, error) {
	return invoke(ctx, c, unavailable, c.timeout, c.memory.Recall, req)
}

// Explain is the plan each routing policy would choose for a Recall, with the route features.
func (c *Client) Explain(ctx context.Context, req *pb.ExplainRequest) (*pb.ExplainResponse, error) {
	return invoke(ctx, c, unavailable, c.timeout, c.memory.Explain, req)
}

// List is one page of a namespace's memories; pass its NextPageToken for the next.
func (c *Client) List(ctx context.Context, req *pb.ListRequest) (*pb.ListResponse, error) {
	return invoke(ctx, c, unavailable, c.timeout, c.memory.List, req)
}

// Get reads one memory by id.
func (c *Client) Get(ctx context.Context, req *pb.GetRequest) (*pb.MemoryRecord, error) {
	resp, err := invoke(ctx, c, unavailable, c.timeout, c.memory.Get, req)
	return resp.GetRecord(), err
}

// Forget deletes one memory by id, or those matching a filter, and says how many. It is not
// retried.
func (c *Client) Forget(ctx context.Context, req *pb.ForgetRequest) (uint64, error) {
	resp, err := invoke(ctx, c, never, c.timeout, c.memory.Forget, req)
	return resp.GetForgottenCount(), err
}

// Stats counts memories per namespace and tier; with a namespace ("" for all), its pockets.
func (c *Client) Stats(ctx context.Context, namespace string) (*pb.StatsResponse, error) {
	req := &pb.StatsRequest{Namespace: namespace}
	return invoke(ctx, c, unavailable, c.timeout, c.memory.Stats, req)
}

// Reconcile stores authoritative facts and marks the current memories on their topic that
// they contradict obsolete (reason "reconcile"); with DryRun it only says what it would mark.
// Its deadline grows with the facts (BatchTimePerItem); it is not retried.
func (c *Client) Reconcile(ctx context.Context, req *pb.ReconcileRequest) (*pb.ReconcileResponse, error) {
	timeout := max(c.timeout, time.Duration(len(req.GetFacts()))*BatchTimePerItem)
	return invoke(ctx, c, never, timeout, c.memory.Reconcile, req)
}

// Unsupersede makes obsolete memories current again and says which of them were obsolete. It
// is not retried.
func (c *Client) Unsupersede(ctx context.Context, namespace string, memoryIDs []string) ([]string, error) {
	req := &pb.UnsupersedeRequest{Namespace: namespace, MemoryIds: memoryIDs}
	resp, err := invoke(ctx, c, never, c.timeout, c.memory.Unsupersede, req)
	return resp.GetRestored(), err
}

// EndSession ends a session: its turns are summarised into warm memories (each naming its
// turns in DerivedFrom) and move from hot to warm. It is not retried.
func (c *Client) EndSession(ctx context.Context, namespace, sessionID string) (*pb.EndSessionResponse, error) {
	req := &pb.EndSessionRequest{Namespace: namespace, SessionId: sessionID}
	return invoke(ctx, c, never, c.timeout, c.memory.EndSession, req)
}

// Maintain runs the lifecycle maintenance now over namespace ("": every namespace the token
// sees, which it must grant all of) and reports what it did. It waits at least MaintainTimeout
// and is not retried.
func (c *Client) Maintain(ctx context.Context, namespace string) (*pb.MaintainResponse, error) {
	req := &pb.MaintainRequest{Namespace: namespace}
	return invoke(ctx, c, never, max(c.timeout, MaintainTimeout), c.memory.Maintain, req)
}
