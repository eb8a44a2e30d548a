package engine

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/drama-tts/drama/engine/enginepb"
)

var kindCodes = map[Kind]codes.Code{
	KindFailed:   codes.Internal,
	KindInvalid:  codes.InvalidArgument,
	KindBusy:     codes.ResourceExhausted,
	KindNotReady: codes.Unavailable,
}

// toStatus turns an error from an Engine into a gRPC status error whose
// code and ErrorDetail carry its kind, message and log tail.
func toStatus(op string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	e := Error{Kind: KindFailed, Op: op, Msg: err.Error()}
	var found *Error
	if errors.As(err, &found) {
		e = *found
		if e.Op == "" {
			e.Op = op
		}
	}
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	if found != nil && error(found) != err {
		msg = err.Error() // keep the context wrapped around the *Error
	}
	detail := &pb.ErrorDetail{Kind: int32(e.Kind), Op: e.Op, Message: msg, LogTail: e.LogTail}
	st, derr := status.New(kindCodes[e.Kind], msg).WithDetails(detail)
	if derr != nil {
		return status.Error(kindCodes[e.Kind], msg)
	}
	return st.Err()
}

// fromStatus turns an error from a gRPC call back into the engine error it
// stood for. When ctx is done the context's error is returned, so a caller
// that cancelled sees context.Canceled. A status without an ErrorDetail is a
// transport failure (the plugin died or the connection broke): KindFailed.
func fromStatus(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("engine: %s: %w", op, context.Cause(ctx))
	}
	st, ok := status.FromError(err)
	if !ok {
		return &Error{Kind: KindFailed, Op: op, Err: err}
	}
	for _, d := range st.Details() {
		if pd, ok := d.(*pb.ErrorDetail); ok {
			k := Kind(pd.GetKind())
			if k < KindFailed || k > KindNotReady {
				k = KindFailed
			}
			if pd.GetOp() != "" {
				op = pd.GetOp()
			}
			return &Error{Kind: k, Op: op, Msg: pd.GetMessage(), LogTail: pd.GetLogTail()}
		}
	}
	switch st.Code() {
	case codes.Canceled:
		return fmt.Errorf("engine: %s: %w", op, context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("engine: %s: %w", op, context.DeadlineExceeded)
	case codes.InvalidArgument:
		return &Error{Kind: KindInvalid, Op: op, Msg: st.Message()}
	}
	return &Error{Kind: KindFailed, Op: op, Msg: "plugin connection: " + st.Message()}
}
