// Package iampolicy holds IAM policy documents as data: the JSON shape IAM
// reads (Version, Statement, Effect, Principal, Action, Resource,
// Condition), and an evaluator for the part of IAM's logic that
// spokeforge's documents use, so that the fake AWS account refuses exactly
// what the documents do not allow. The documents themselves are derived
// from a cluster record in package names.
package iampolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Version is the policy language version every document carries.
const Version = "2012-10-17"

// Document is an IAM policy document (identity-based or a role's trust
// policy).
type Document struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement. Condition maps an operator (StringEquals,
// ArnEquals, …) to condition keys and the values any of which satisfies it.
type Statement struct {
	Sid       string                        `json:"Sid,omitempty"`
	Effect    string                        `json:"Effect"`
	Principal map[string]Strings            `json:"Principal,omitempty"`
	Action    Strings                       `json:"Action"`
	Resource  Strings                       `json:"Resource,omitempty"`
	Condition map[string]map[string]Strings `json:"Condition,omitempty"`
}

// Strings is a policy element that IAM accepts as a string or a list of
// strings; it is always written as a list.
type Strings []string

// UnmarshalJSON accepts "a" or ["a", "b"].
func (s *Strings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = Strings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings")
	}
	*s = many
	return nil
}

// WithoutResource is d with resource left out of every statement, and a
// statement left with no resource dropped: d narrowed by one resource.
func (d Document) WithoutResource(resource string) Document {
	out := Document{Version: d.Version}
	for _, st := range d.Statement {
		var keep Strings
		for _, r := range st.Resource {
			if r != resource {
				keep = append(keep, r)
			}
		}
		if len(keep) > 0 {
			st.Resource = keep
			out.Statement = append(out.Statement, st)
		}
	}
	return out
}

// Request is what one call asks of a policy: the action ("sqs:GetQueueUrl"),
// the resource's ARN ("" for a trust policy, which names none), the calling
// principal's service for a trust policy, and the request's condition keys
// ("aws:SourceArn", "aws:PrincipalTag/x509Subject/CN", …).
type Request struct {
	Action, Resource, PrincipalService string
	Context                            map[string]string
}

// Decision is the outcome of evaluating documents for a request.
type Decision int

const (
	// ImplicitDeny: no statement allows the request.
	ImplicitDeny Decision = iota
	// Allow: a statement allows it and none denies it.
	Allow
	// ExplicitDeny: a Deny statement matches, whatever allows it.
	ExplicitDeny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allowed"
	case ExplicitDeny:
		return "explicitly denied"
	}
	return "not allowed (no statement allows it)"
}

// Evaluate applies IAM's rule across docs: an explicit Deny wins, else an
// Allow allows, else the request is implicitly denied. A statement with a
// condition operator it does not know never matches (so it allows nothing).
func Evaluate(req Request, docs ...Document) Decision {
	allowed := false
	for _, d := range docs {
		for _, st := range d.Statement {
			if !st.matches(req) {
				continue
			}
			switch st.Effect {
			case "Deny":
				return ExplicitDeny
			case "Allow":
				allowed = true
			}
		}
	}
	if allowed {
		return Allow
	}
	return ImplicitDeny
}

func (st Statement) matches(req Request) bool {
	if !anyMatch(st.Action, req.Action, true) {
		return false
	}
	if req.Resource != "" && !anyMatch(st.Resource, req.Resource, false) {
		return false
	}
	if req.PrincipalService != "" && !anyMatch(st.Principal["Service"], req.PrincipalService, false) {
		return false
	}
	for op, keys := range st.Condition {
		for key, values := range keys {
			if !condition(op, req.Context[key], hasKey(req.Context, key), values) {
				return false
			}
		}
	}
	return true
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// condition evaluates one operator on one key: any value satisfies it; a
// negated operator holds when none matches (also when the key is absent).
func condition(op, got string, present bool, values Strings) bool {
	var match func(pattern string) bool
	negated := false
	switch op {
	case "StringEquals", "ArnEquals":
		match = func(p string) bool { return p == got }
	case "StringNotEquals", "ArnNotEquals":
		match, negated = func(p string) bool { return p == got }, true
	case "StringEqualsIgnoreCase":
		match = func(p string) bool { return strings.EqualFold(p, got) }
	case "StringLike", "ArnLike":
		match = func(p string) bool { return Wildcard(p, got, false) }
	case "StringNotLike", "ArnNotLike":
		match, negated = func(p string) bool { return Wildcard(p, got, false) }, true
	default:
		return false
	}
	if !present {
		return negated
	}
	for _, v := range values {
		if match(v) {
			return !negated
		}
	}
	return negated
}

func anyMatch(patterns Strings, v string, fold bool) bool {
	for _, p := range patterns {
		if Wildcard(p, v, fold) {
			return true
		}
	}
	return false
}

// Wildcard matches s against an IAM pattern: * is any run of characters
// (none included), ? any one; fold compares case-insensitively (actions).
func Wildcard(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	// Iterative glob with one backtrack point: linear in practice, never
	// exponential on hostile patterns.
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
