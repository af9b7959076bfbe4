package healthchecks

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// transientCodes are AWS error codes that say "try again", not "wrong".
var transientCodes = map[string]bool{
	"Throttling": true, "ThrottlingException": true, "ThrottledException": true, "RequestLimitExceeded": true,
	"TooManyRequestsException": true, "RequestThrottled": true, "SlowDown": true, "ServiceUnavailable": true,
	"ServiceUnavailableException": true, "InternalFailure": true, "InternalError": true, "InternalServiceError": true,
	"InternalServerError": true, "RequestTimeout": true, "RequestTimeoutException": true, "IDPCommunicationError": true,
}

// notFoundCodes may be eventual consistency right after a create, so they
// are retried; if they persist they are a hard "not provisioned".
var notFoundCodes = map[string]bool{
	"ResourceNotFoundException": true, "QueueDoesNotExist": true, "AWS.SimpleQueueService.NonExistentQueue": true,
	"RepositoryNotFoundException": true, "NotFound": true, "NoSuchBucket": true,
}

// notAuthorizedCodes are IAM's refusals: the caller's policies do not allow the call.
var notAuthorizedCodes = map[string]bool{
	"AccessDenied": true, "AccessDeniedException": true, "UnauthorizedOperation": true, "AuthorizationError": true,
}

// NotAuthorized reports an AWS error that says the calling role may not
// make the call (its permission policy does not allow it).
func NotAuthorized(err error) bool {
	return notAuthorizedCodes[errorCode(err)]
}

// v1Error and v1RequestFailure are aws-sdk-go v1's awserr.Error and awserr.RequestFailure (the
// Roles Anywhere helper returns its errors), matched by their methods so that spokeforge imports
// no SDK v1 (out of support since July 2025).
type v1Error interface {
	error
	Code() string
	Message() string
	OrigErr() error
}

type v1RequestFailure interface {
	v1Error
	StatusCode() int
	RequestID() string
}

// errorCode is the AWS error code of err, or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	var v1 v1Error
	if errors.As(err, &v1) {
		return v1.Code()
	}
	return ""
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	var v1 v1RequestFailure
	if errors.As(err, &v1) {
		return v1.StatusCode()
	}
	return 0
}

// Transient reports whether err says "not now" rather than "wrong":
// timeouts, connection failures, throttling and server-side errors, for
// AWS and for the Kubernetes API alike.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return true
	}
	if transientCodes[errorCode(err)] || httpStatus(err) >= 500 || httpStatus(err) == 429 {
		return true
	}
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	// Errors that lost their type on the way (the Roles Anywhere helper
	// wraps SDK v1 errors; client-go wraps dial errors in url.Error).
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "i/o timeout", "no such host", "EOF", "timeout awaiting", "TLS handshake timeout"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// NotFound reports an AWS not-found error code.
func NotFound(err error) bool {
	return notFoundCodes[errorCode(err)] || httpStatus(err) == 404
}

// call runs fn with a per-attempt timeout, retrying transient and
// not-found errors with doubling backoff capped at Retry.Max. It returns
// the last error and the attempts made.
func (r *run) call(ctx context.Context, fn func(context.Context) error) (int, error) {
	wait := r.cfg.Retry.Initial
	var err error
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		err = fn(actx)
		cancel()
		if err == nil || attempt >= r.cfg.Retry.Attempts || !(Transient(err) || NotFound(err)) || ctx.Err() != nil {
			return attempt, err
		}
		select {
		case <-ctx.Done():
			return attempt, err
		case <-time.After(wait):
		}
		wait = min(wait*2, r.cfg.Retry.Max)
	}
}

// classify turns a call's final error into a state: transient → Pending.
func classify(err error) State {
	if Transient(err) {
		return Pending
	}
	return Failed
}

// short trims an error for a condition message.
func short(err error) string {
	msg := err.Error()
	if len(msg) > 400 {
		msg = strings.ToValidUTF8(msg[:400], "") + "..."
	}
	return msg
}
