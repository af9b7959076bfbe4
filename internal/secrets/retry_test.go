package secrets

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
)

func apiErr(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: code + " happened"}
}

func TestPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ph       phase
		errs     []error // the answers in order; nil is success
		attempts int
		code     string // of the final error, "" for success
	}{
		{"success", steady, []error{nil}, 1, ""},
		{"throttling is retried", steady, []error{apiErr("ThrottlingException"), apiErr("ThrottlingException"), nil}, 3, ""},
		{"internal error is retried", steady, []error{apiErr("InternalServiceError"), nil}, 2, ""},
		{"not found on a plain read is an answer", steady, []error{apiErr("ResourceNotFoundException"), nil}, 1, "ResourceNotFoundException"},
		{"not found after our create is retried", afterCreate, []error{apiErr("ResourceNotFoundException"), apiErr("ResourceNotFoundException"), nil}, 3, ""},
		{"invalid request after our create is retried", afterCreate, []error{apiErr("InvalidRequestException"), nil}, 2, ""},
		{"not found after 'exists' is retried", afterExists, []error{apiErr("ResourceNotFoundException"), nil}, 2, ""},
		{"invalid request after 'exists' is not", afterExists, []error{apiErr("InvalidRequestException"), nil}, 1, "InvalidRequestException"},
		{"invalid request on a plain call is not", steady, []error{apiErr("InvalidRequestException"), nil}, 1, "InvalidRequestException"},
		{"access denied never", afterCreate, []error{apiErr("AccessDeniedException"), nil}, 1, "AccessDeniedException"},
		{"validation never", afterCreate, []error{apiErr("ValidationException"), nil}, 1, "ValidationException"},
		// Waits 1+2+4+4 = 11 s fit the 12 s deadline; the next 4 s does not.
		{"deadline", afterCreate, []error{apiErr("ResourceNotFoundException"), apiErr("ResourceNotFoundException"), apiErr("ResourceNotFoundException"),
			apiErr("ResourceNotFoundException"), apiErr("ResourceNotFoundException"), apiErr("ResourceNotFoundException"), nil}, 5, "ResourceNotFoundException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			p := Policy{Initial: time.Second, Max: 4 * time.Second, Deadline: 12 * time.Second,
				Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			calls := 0
			n, err := p.do(context.Background(), tc.ph, func(context.Context) error {
				e := tc.errs[calls]
				calls++
				return e
			})
			if n != tc.attempts || calls != tc.attempts || errorCode(err) != tc.code {
				t.Fatalf("attempts %d (calls %d), err %v; want %d, %q", n, calls, err, tc.attempts, tc.code)
			}
			for i, w := range waits {
				if want := min(time.Second<<i, 4*time.Second); w != want {
					t.Fatalf("wait %d = %s, want %s", i, w, want)
				}
			}
			if tc.name == "deadline" && !strings.Contains(err.Error(), "still failing after 5 attempts over 11s") {
				t.Fatalf("deadline error = %v", err)
			}
		})
	}
}

func TestPolicyStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	n, err := DefaultPolicy.do(ctx, afterCreate, func(context.Context) error { return apiErr("ResourceNotFoundException") })
	if n != 1 || !errors.As(err, new(smithy.APIError)) {
		t.Fatalf("attempts %d, err %v", n, err)
	}
}
