package pocketd

import (
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a failed call: the server's status code and message, and the rich details pocketd
// sends with them. Every error a Client or Task method returns for a call that got a status is
// an *Error; take it with errors.As. status.Code and status.FromError work on it too.
type Error struct {
	// Code is the gRPC status code (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...).
	Code codes.Code
	// Message is the status message.
	Message string
	// FieldViolations are the bad fields of an INVALID_ARGUMENT (google.rpc.BadRequest), by their
	// path in the request ("items[3].record.vector", "top_k").
	FieldViolations []*errdetails.BadRequest_FieldViolation
	// QuotaViolations are the limits a RESOURCE_EXHAUSTED ran into (google.rpc.QuotaFailure):
	// a task's "total", "round", "tool:NAME", or a server setting.
	QuotaViolations []*errdetails.QuotaFailure_Violation
	// PreconditionViolations say what a FAILED_PRECONDITION failed on
	// (google.rpc.PreconditionFailure).
	PreconditionViolations []*errdetails.PreconditionFailure_Violation

	status *status.Status
}

// asError is err as an *Error when it carries a status, else err itself.
func asError(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() == codes.OK {
		return err
	}
	e := &Error{Code: st.Code(), Message: st.Message(), status: st}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			e.FieldViolations = append(e.FieldViolations, d.GetFieldViolations()...)
		case *errdetails.QuotaFailure:
			e.QuotaViolations = append(e.QuotaViolations, d.GetViolations()...)
		case *errdetails.PreconditionFailure:
			e.PreconditionViolations = append(e.PreconditionViolations, d.GetViolations()...)
		}
	}
	return e
}

// Error is the code and the message (pocketd's message names the bad fields too).
func (e *Error) Error() string {
	return fmt.Sprintf("pocketd: %s: %s", e.Code, e.Message)
}

// GRPCStatus is the status as received, details included.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// Field is the description of the violation of field, if the request broke it.
func (e *Error) Field(field string) (string, bool) {
	for _, v := range e.FieldViolations {
		if v.GetField() == field {
			return v.GetDescription(), true
		}
	}
	return "", false
}
