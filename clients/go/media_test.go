package pocketd

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The media calls (issue 30) against the fake server: what they put on the wire, and their
// deadlines. The server's own reading of media is tested by its suites.

var (
	png = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...)
	wav = append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), make([]byte, 32)...)
	sum = "abababababababababababababababababababababababababababababababab"
)

func TestMediaWrites(t *testing.T) {
	f, c := startFake(t, 0, Options{Timeout: 2 * time.Second})
	ctx := context.Background()
	when := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	_, err := c.RememberImage(ctx, "support", png,
		WithCaption("the customer's refund error"), WithSession("s1"), WithSpeaker("user"),
		WithOccurredAt(when), WithTags("refund", "error"), WithGroup("g1"),
		WithRecord(func(r *pb.MemoryRecord) { r.Topic = "refunds" }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RememberAudio(ctx, "me", wav, WithLanguage("zh"), WaitProcessed()); err != nil {
		t.Fatal(err)
	}
	table := []byte("sku,price\nA-1,3.20\n")
	if _, err := c.RememberTable(ctx, "me", table, WithKind(pb.MemoryKind_MEMORY_KIND_FACT)); err != nil {
		t.Fatal(err)
	}
	calls := f.all()
	if got := f.methods(); !slices.Equal(got, []string{"Remember", "Remember", "Remember"}) {
		t.Fatalf("calls = %v", got)
	}
	img := calls[0].req.(*pb.RememberRequest)
	r := img.GetRecord()
	if r.GetModality() != pb.Modality_MODALITY_IMAGE || r.GetKind() != pb.MemoryKind_MEMORY_KIND_OBSERVATION ||
		!bytes.Equal(r.GetBlob().GetData(), png) || r.GetBlob().GetUri() != "" || r.GetNamespace() != "support" {
		t.Errorf("the image: %v", r)
	}
	if r.GetText() != "the customer's refund error" || r.GetSessionId() != "s1" || r.GetSpeaker() != "user" ||
		!r.GetOccurredAt().AsTime().Equal(when) || !slices.Equal(r.GetTags(), []string{"refund", "error"}) ||
		r.GetGroupId() != "g1" || r.GetTopic() != "refunds" || img.GetWaitProcessed() {
		t.Errorf("the image's fields: %v", img)
	}
	audio := calls[1].req.(*pb.RememberRequest)
	if a := audio.GetRecord(); a.GetModality() != pb.Modality_MODALITY_AUDIO || a.GetBlob().GetLanguage() != "zh" ||
		!bytes.Equal(a.GetBlob().GetData(), wav) || !audio.GetWaitProcessed() {
		t.Errorf("the recording: %v", audio)
	}
	if tb := calls[2].req.(*pb.RememberRequest).GetRecord(); tb.GetModality() != pb.Modality_MODALITY_TABLE ||
		tb.GetKind() != pb.MemoryKind_MEMORY_KIND_FACT || !bytes.Equal(tb.GetBlob().GetData(), table) {
		t.Errorf("the table: %v", tb)
	}
	// A write that waits for its medium to be read waits at least MediaWaitTimeout.
	for i, want := range []time.Duration{2 * time.Second, MediaWaitTimeout, 2 * time.Second} {
		if got := calls[i].deadline; got <= want-time.Second || got > want {
			t.Errorf("call %d: deadline left %v, want about %v", i, got, want)
		}
	}
}

func TestAWaitingBatchWaitsLonger(t *testing.T) {
	f, c := startFake(t, 0, Options{Timeout: 2 * time.Second})
	items := []*pb.RememberRequest{NewMemory("me", "a text"), NewMedia("me", pb.Modality_MODALITY_IMAGE, png, WaitProcessed())}
	if _, err := c.RememberBatch(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	if got := f.all()[0].deadline; got <= MediaWaitTimeout-time.Second || got > MediaWaitTimeout {
		t.Errorf("deadline left %v, want about %v", got, MediaWaitTimeout)
	}
}

func TestRecallByImage(t *testing.T) {
	f, c := startFake(t, 0, Options{})
	ctx := context.Background()
	req := &pb.RecallRequest{Namespace: "support", QueryText: "the error code", TopK: proto.Int32(3)}
	if _, err := c.RecallByImage(ctx, req, &pb.BlobRef{Data: png}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RecallByImage(ctx, &pb.RecallRequest{Namespace: "support"}, &pb.BlobRef{Sha256: sum}); err != nil {
		t.Fatal(err)
	}
	if req.GetQueryBlob() != nil || req.GetQueryModality() != pb.Modality_MODALITY_UNSPECIFIED {
		t.Errorf("the caller's request was changed: %v", req)
	}
	calls := f.all()
	byBytes := calls[0].req.(*pb.RecallRequest)
	if !bytes.Equal(byBytes.GetQueryBlob().GetData(), png) || byBytes.GetQueryModality() != pb.Modality_MODALITY_IMAGE ||
		byBytes.GetQueryText() != "the error code" || byBytes.GetTopK() != 3 {
		t.Errorf("by bytes: %v", byBytes)
	}
	byHash := calls[1].req.(*pb.RecallRequest)
	if byHash.GetQueryBlob().GetSha256() != sum || len(byHash.GetQueryBlob().GetData()) != 0 ||
		byHash.GetQueryModality() != pb.Modality_MODALITY_IMAGE {
		t.Errorf("by a held blob: %v", byHash)
	}
}

func TestMediaWithoutBytesIsRefusedBeforeSending(t *testing.T) {
	f, c := startFake(t, 0, Options{})
	ctx := context.Background()
	recall := &pb.RecallRequest{Namespace: "n"}
	for name, call := range map[string]func() error{
		"RememberImage": func() error { _, err := c.RememberImage(ctx, "n", nil); return err },
		"RememberAudio": func() error { _, err := c.RememberAudio(ctx, "n", []byte{}); return err },
		"no image":      func() error { _, err := c.RecallByImage(ctx, recall, nil); return err },
		"both":          func() error { _, err := c.RecallByImage(ctx, recall, &pb.BlobRef{Data: png, Sha256: sum}); return err },
	} {
		if err := call(); !errors.Is(err, ErrNoMedia) {
			t.Errorf("%s: got %v, want ErrNoMedia", name, err)
		}
	}
	if got := f.methods(); len(got) != 0 {
		t.Errorf("sent %v", got)
	}
}

func TestMediaWritesNotRetriedButRecallByImageIs(t *testing.T) {
	f, c := startFake(t, 2, Options{})
	ctx := context.Background()
	if _, err := c.RememberImage(ctx, "n", png); status.Code(err) != codes.Unavailable {
		t.Fatalf("RememberImage: got %v, want UNAVAILABLE", err)
	}
	if _, err := c.RecallByImage(ctx, &pb.RecallRequest{Namespace: "n"}, &pb.BlobRef{Data: png}); err != nil {
		t.Fatalf("RecallByImage: %v", err)
	}
	if got := f.methods(); !slices.Equal(got, []string{"Remember", "Recall", "Recall"}) {
		t.Errorf("calls = %v", got)
	}
}
