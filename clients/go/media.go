package pocketd

import (
	"context"
	"errors"
	"time"

	pb "github.com/pocketd/pocketd/clients/go/pocketd/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// MediaWaitTimeout is the least a write that waits for its medium to be read (WaitProcessed)
// waits: OCR takes about a second an image on two cores and a transcript a fraction of the
// recording's length, behind whatever the queue holds, so it waits as long as the server lets a
// call run (server.max_call_seconds, 60 s by default).
const MediaWaitTimeout = 60 * time.Second

// A MediaOption sets a field of a media write (RememberImage, RememberAudio, RememberTable,
// NewMedia).
type MediaOption func(*pb.RememberRequest)

// WithCaption is the client's text about the medium: kept as an image's description (without
// one, the OCR text is), or a recording's transcript of your own.
func WithCaption(text string) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.Text = text }
}

// WithLanguage is the language a recording is in: "en", "zh" or "auto" (unset: the server's
// media.speech.default_language).
func WithLanguage(language string) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.Blob.Language = language }
}

// WithKind replaces the default kind, MEMORY_KIND_OBSERVATION.
func WithKind(kind pb.MemoryKind) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.Kind = kind }
}

// WithSession puts the medium in a session (and the session's Recall waits for it while it is
// read).
func WithSession(sessionID string) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.SessionId = sessionID }
}

// WithSpeaker says who sent it ("user", a name).
func WithSpeaker(speaker string) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.Speaker = speaker }
}

// WithOccurredAt is when it happened (unset: now).
func WithOccurredAt(t time.Time) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.OccurredAt = timestamppb.New(t) }
}

// WithTags adds tags.
func WithTags(tags ...string) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.Tags = append(r.Record.Tags, tags...) }
}

// WithGroup puts it in a group (an item's image, caption and summary share one group_id, and
// Recall returns the group once).
func WithGroup(groupID string) MediaOption {
	return func(r *pb.RememberRequest) { r.Record.GroupId = groupID }
}

// WithRecord sets any other field of the record (Importance, Topic, MemoryId, ...).
func WithRecord(edit func(*pb.MemoryRecord)) MediaOption {
	return func(r *pb.RememberRequest) { edit(r.Record) }
}

// WaitProcessed waits, up to the call's deadline (at least MediaWaitTimeout), until the medium
// is read and stored, so that the reply says what the gate and the alignment check decided.
// Without it the reply comes once the medium is durable, ProcessingState PROCESSING.
func WaitProcessed() MediaOption {
	return func(r *pb.RememberRequest) { r.WaitProcessed = true }
}

// ErrNoMedia is returned, before anything is sent, for a media write without bytes and for a
// RecallByImage whose image has neither Data nor Sha256 (or both).
var ErrNoMedia = errors.New("pocketd: a medium needs its bytes (or, to recall by a held blob, its sha256 alone)")

// NewMedia is a request to remember a medium's bytes in namespace: an observation of modality
// whose blob carries data (pocketd sniffs its type, stores it and reads it), with opts applied.
// Remember sends it; RememberImage, RememberAudio and RememberTable build and send one.
func NewMedia(namespace string, modality pb.Modality, data []byte, opts ...MediaOption) *pb.RememberRequest {
	req := &pb.RememberRequest{Record: &pb.MemoryRecord{
		Namespace: namespace,
		Kind:      pb.MemoryKind_MEMORY_KIND_OBSERVATION,
		Modality:  modality,
		Blob:      &pb.BlobRef{Data: data},
	}}
	for _, o := range opts {
		o(req)
	}
	return req
}

// RememberImage stores an image (PNG, JPEG, GIF, WebP or BMP bytes: a screenshot, a photo):
// pocketd keeps it, reads its text (OCR) and, with an image space, its vector. It is not
// retried.
func (c *Client) RememberImage(ctx context.Context, namespace string, data []byte, opts ...MediaOption) (*pb.RememberResponse, error) {
	return c.rememberMedia(ctx, NewMedia(namespace, pb.Modality_MODALITY_IMAGE, data, opts...))
}

// RememberAudio stores a recording (WAV, FLAC, OGG, MP3 or M4A bytes: a voice note): pocketd
// keeps it and transcribes it (WithLanguage names its language). It is not retried.
func (c *Client) RememberAudio(ctx context.Context, namespace string, data []byte, opts ...MediaOption) (*pb.RememberResponse, error) {
	return c.rememberMedia(ctx, NewMedia(namespace, pb.Modality_MODALITY_AUDIO, data, opts...))
}

// RememberTable stores a table (CSV, TSV or Markdown bytes): pocketd keeps it and linearises it
// into "column: value" rows, its column names as tags (rows left out are counted in the
// reply's Warnings). It is not retried.
func (c *Client) RememberTable(ctx context.Context, namespace string, data []byte, opts ...MediaOption) (*pb.RememberResponse, error) {
	return c.rememberMedia(ctx, NewMedia(namespace, pb.Modality_MODALITY_TABLE, data, opts...))
}

func (c *Client) rememberMedia(ctx context.Context, req *pb.RememberRequest) (*pb.RememberResponse, error) {
	if len(req.GetRecord().GetBlob().GetData()) == 0 {
		return nil, ErrNoMedia
	}
	return c.Remember(ctx, req)
}

// RecallByImage is req (its namespace, and any QueryText, TopK, Filter, ...) as a query by
// image: image is the image's bytes (&pb.BlobRef{Data: png}) or a blob pocketd holds
// (&pb.BlobRef{Sha256: sum}, a record's Blob.Sha256). The server encodes it into its image
// space (FAILED_PRECONDITION without one) and weighs the vector channel as for an image
// query. req is left as it was; the call is retried as Recall is.
func (c *Client) RecallByImage(ctx context.Context, req *pb.RecallRequest, image *pb.BlobRef) (*pb.RecallResponse, error) {
	if (len(image.GetData()) == 0) == (image.GetSha256() == "") {
		return nil, ErrNoMedia
	}
	q := &pb.RecallRequest{}
	if req != nil {
		q = proto.CloneOf(req)
	}
	q.QueryBlob = image
	q.QueryModality = pb.Modality_MODALITY_IMAGE
	return c.Recall(ctx, q)
}

// writeTimeout is a write's deadline: timeout, or at least MediaWaitTimeout when one of reqs
// waits for its medium to be read.
func writeTimeout(timeout time.Duration, reqs ...*pb.RememberRequest) time.Duration {
	for _, r := range reqs {
		if r.GetWaitProcessed() {
			return max(timeout, MediaWaitTimeout)
		}
	}
	return timeout
}
