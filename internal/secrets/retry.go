package secrets

import (
	"context"
	"errors"
	"fmt"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// Policy retries a Secrets Manager call on top of the SDK's standard
// retryer, which already retries throttling and 5xx a few times: this adds a
// deadline-bound backoff for what is transient only in context. A
// ResourceNotFoundException right after a create (or after CreateSecret
// said the secret exists) is the service's eventual consistency; an
// InvalidRequestException right after our own create is too; throttling is
// transient always. Everything else (access denied, a name over the limit,
// a secret scheduled for deletion found by a plain read) is answered at
// once: retrying it blindly would only hide it.
type Policy struct {
	// Initial is the first wait, doubled up to Max; Deadline bounds the
	// waits of one call.
	Initial, Max, Deadline time.Duration
	// Sleep waits (a test replaces it); nil sleeps on the clock.
	Sleep func(context.Context, time.Duration) error
}

// DefaultPolicy waits 250 ms, 500 ms, 1 s... up to 4 s, for at most 60 s:
// Secrets Manager's read-after-create gap is seconds.
var DefaultPolicy = Policy{Initial: 250 * time.Millisecond, Max: 4 * time.Second, Deadline: 60 * time.Second}

// phase is where in a secret's synchronisation a call is made.
type phase int

const (
	// steady: the secret was found as it is.
	steady phase = iota
	// afterCreate: our CreateSecret just succeeded.
	afterCreate
	// afterExists: CreateSecret said the secret exists although a read had
	// not found it (just created by someone, or not visible yet).
	afterExists
)

// throttlingCodes say "slow down"; Secrets Manager uses ThrottlingException.
var throttlingCodes = map[string]bool{
	"ThrottlingException": true, "Throttling": true, "TooManyRequestsException": true, "RequestLimitExceeded": true,
	"InternalServiceError": true, "InternalFailure": true, "ServiceUnavailable": true,
}

// errorCode is the AWS error code of err, or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func retryable(err error, ph phase) bool {
	if err == nil {
		return false
	}
	var re *awshttp.ResponseError
	switch code := errorCode(err); {
	case throttlingCodes[code]:
		return true
	case errors.As(err, &re) && (re.HTTPStatusCode() >= 500 || re.HTTPStatusCode() == 429):
		return true
	case code == "ResourceNotFoundException":
		return ph == afterCreate || ph == afterExists
	case code == "InvalidRequestException":
		return ph == afterCreate
	}
	return false
}

// do runs fn until it succeeds, fails in a way ph does not retry, or the
// next wait would pass the deadline; it returns the attempts made.
func (p Policy) do(ctx context.Context, ph phase, fn func(context.Context) error) (int, error) {
	sleep := p.Sleep
	if sleep == nil {
		sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	wait, waited := p.Initial, time.Duration(0)
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !retryable(err, ph) {
			return attempt, err
		}
		if waited+wait > p.Deadline {
			return attempt, fmt.Errorf("%w (still failing after %d attempts over %s)", err, attempt, waited)
		}
		if serr := sleep(ctx, wait); serr != nil {
			return attempt, err
		}
		waited += wait
		wait = min(wait*2, p.Max)
	}
}
