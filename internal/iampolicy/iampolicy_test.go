package iampolicy

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestWildcard(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		fold, want bool
	}{
		{"*", "", false, true},
		{"*", "anything", false, true},
		{"arn:aws:sqs:us-east-1:1:eue1-jobs", "arn:aws:sqs:us-east-1:1:eue1-jobs", false, true},
		{"arn:aws:sqs:us-east-1:1:eue1-jobs", "arn:aws:sqs:us-east-1:1:eue1-jobs2", false, false},
		{"arn:aws:secretsmanager:r:1:secret:a/b-??????", "arn:aws:secretsmanager:r:1:secret:a/b-Ab12Cd", false, true},
		{"arn:aws:secretsmanager:r:1:secret:a/b-??????", "arn:aws:secretsmanager:r:1:secret:a/b-Ab12C", false, false},
		{"arn:aws:secretsmanager:r:1:secret:a/b-??????", "arn:aws:secretsmanager:r:1:secret:a/bc-Ab12Cd", false, false},
		{"arn:aws:s3:::eue1-models/*", "arn:aws:s3:::eue1-models/a/b", false, true},
		{"arn:aws:s3:::eue1-models/*", "arn:aws:s3:::eue1-models", false, false},
		{"a*b*c", "aXbYbZc", false, true},
		{"a*b*c", "aXbYbZ", false, false},
		{"sqs:Get*", "sqs:GetQueueUrl", false, true},
		{"sqs:get*", "SQS:GetQueueUrl", true, true},
		{"sqs:get*", "SQS:GetQueueUrl", false, false},
	} {
		if got := Wildcard(tc.pattern, tc.s, tc.fold); got != tc.want {
			t.Errorf("Wildcard(%q, %q, %v) = %v, want %v", tc.pattern, tc.s, tc.fold, got, tc.want)
		}
	}
}

// FuzzWildcard compares Wildcard with the same pattern as a regular expression.
func FuzzWildcard(f *testing.F) {
	for _, s := range [][2]string{{"a*b?c", "axxbyc"}, {"*?*", "q"}, {"**a", "ba"}, {"x-??????", "x-123456"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		// Bytes, not runes, on both sides: the regexp reads s as Latin-1.
		latin1 := func(b string) string {
			r := make([]rune, len(b))
			for i := range len(b) {
				r[i] = rune(b[i])
			}
			return string(r)
		}
		var pre strings.Builder
		pre.WriteString(`(?s)\A`)
		for _, c := range []byte(pattern) {
			switch c {
			case '*':
				pre.WriteString(`.*`)
			case '?':
				pre.WriteString(`.`)
			default:
				pre.WriteString(regexp.QuoteMeta(string(rune(c))))
			}
		}
		pre.WriteString(`\z`)
		want := regexp.MustCompile(pre.String()).MatchString(latin1(s))
		if got := Wildcard(pattern, s, false); got != want {
			t.Fatalf("Wildcard(%q, %q) = %v, regexp says %v", pattern, s, got, want)
		}
	})
}

func TestStringsAcceptsOneOrMany(t *testing.T) {
	var d Document
	if err := json.Unmarshal([]byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":["a","b"]}]}`), &d); err != nil {
		t.Fatal(err)
	}
	if st := d.Statement[0]; len(st.Action) != 1 || st.Action[0] != "s3:GetObject" || len(st.Resource) != 2 {
		t.Fatalf("decoded %+v", st)
	}
	if err := json.Unmarshal([]byte(`{"Statement":[{"Action":7}]}`), &d); err == nil {
		t.Fatal("a number as Action decoded")
	}
	b, _ := json.Marshal(Statement{Effect: "Allow", Action: Strings{"s3:GetObject"}})
	if !strings.Contains(string(b), `"Action":["s3:GetObject"]`) {
		t.Fatalf("written as %s", b)
	}
}

func TestEvaluate(t *testing.T) {
	allowQueue := Document{Version: Version, Statement: []Statement{{Effect: "Allow",
		Action: Strings{"sqs:GetQueueUrl", "sqs:GetQueueAttributes"}, Resource: Strings{"arn:aws:sqs:r:1:eue1-jobs"}}}}
	denyAll := Document{Version: Version, Statement: []Statement{{Effect: "Deny", Action: Strings{"*"}, Resource: Strings{"*"}}}}
	trust := Document{Version: Version, Statement: []Statement{{Effect: "Allow",
		Principal: map[string]Strings{"Service": {"rolesanywhere.amazonaws.com"}},
		Action:    Strings{"sts:AssumeRole"},
		Condition: map[string]map[string]Strings{
			"ArnEquals":    {"aws:SourceArn": {"arn:anchor"}},
			"StringEquals": {"aws:PrincipalTag/x509Subject/CN": {"gpu-east-1", "gpu-east-2"}},
		}}}}
	tags := func(cn string) map[string]string {
		return map[string]string{"aws:SourceArn": "arn:anchor", "aws:PrincipalTag/x509Subject/CN": cn}
	}
	for _, tc := range []struct {
		name string
		req  Request
		docs []Document
		want Decision
	}{
		{"named action and resource", Request{Action: "sqs:GetQueueUrl", Resource: "arn:aws:sqs:r:1:eue1-jobs"}, []Document{allowQueue}, Allow},
		{"action case-insensitive", Request{Action: "SQS:getqueueurl", Resource: "arn:aws:sqs:r:1:eue1-jobs"}, []Document{allowQueue}, Allow},
		{"another resource", Request{Action: "sqs:GetQueueUrl", Resource: "arn:aws:sqs:r:1:eue2-jobs"}, []Document{allowQueue}, ImplicitDeny},
		{"another action", Request{Action: "sqs:DeleteQueue", Resource: "arn:aws:sqs:r:1:eue1-jobs"}, []Document{allowQueue}, ImplicitDeny},
		{"no documents", Request{Action: "sqs:GetQueueUrl", Resource: "x"}, nil, ImplicitDeny},
		{"deny wins", Request{Action: "sqs:GetQueueUrl", Resource: "arn:aws:sqs:r:1:eue1-jobs"}, []Document{allowQueue, denyAll}, ExplicitDeny},
		{"trust: subject and anchor", Request{Action: "sts:AssumeRole", PrincipalService: "rolesanywhere.amazonaws.com", Context: tags("gpu-east-2")}, []Document{trust}, Allow},
		{"trust: another subject", Request{Action: "sts:AssumeRole", PrincipalService: "rolesanywhere.amazonaws.com", Context: tags("gpu-west-1")}, []Document{trust}, ImplicitDeny},
		{"trust: key missing", Request{Action: "sts:AssumeRole", PrincipalService: "rolesanywhere.amazonaws.com", Context: map[string]string{"aws:SourceArn": "arn:anchor"}}, []Document{trust}, ImplicitDeny},
		{"trust: another principal", Request{Action: "sts:AssumeRole", PrincipalService: "ec2.amazonaws.com", Context: tags("gpu-east-1")}, []Document{trust}, ImplicitDeny},
		{"trust: another anchor", Request{Action: "sts:AssumeRole", PrincipalService: "rolesanywhere.amazonaws.com",
			Context: map[string]string{"aws:SourceArn": "arn:other", "aws:PrincipalTag/x509Subject/CN": "gpu-east-1"}}, []Document{trust}, ImplicitDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Evaluate(tc.req, tc.docs...); got != tc.want {
				t.Fatalf("Evaluate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConditionOperators(t *testing.T) {
	for _, tc := range []struct {
		op, got string
		present bool
		values  Strings
		want    bool
	}{
		{"StringEquals", "a", true, Strings{"b", "a"}, true},
		{"StringEquals", "A", true, Strings{"a"}, false},
		{"StringEqualsIgnoreCase", "A", true, Strings{"a"}, true},
		{"StringEquals", "", false, Strings{""}, false},
		{"StringNotEquals", "a", true, Strings{"b"}, true},
		{"StringNotEquals", "a", true, Strings{"a"}, false},
		{"StringNotEquals", "", false, Strings{"a"}, true},
		{"StringLike", "gpu-east-1", true, Strings{"gpu-*"}, true},
		{"StringNotLike", "gpu-east-1", true, Strings{"gpu-*"}, false},
		{"ArnLike", "arn:aws:x:r:1:y", true, Strings{"arn:aws:x:*:1:y"}, true},
		{"NumericEquals", "1", true, Strings{"1"}, false}, // not spoken here: never matches
		{"StringEqualsIfExists", "a", true, Strings{"a"}, false},
	} {
		if got := condition(tc.op, tc.got, tc.present, tc.values); got != tc.want {
			t.Errorf("%s(%q present=%v, %v) = %v, want %v", tc.op, tc.got, tc.present, tc.values, got, tc.want)
		}
	}
}

func TestWithoutResource(t *testing.T) {
	d := Document{Version: Version, Statement: []Statement{
		{Sid: "Queues", Effect: "Allow", Action: Strings{"sqs:GetQueueUrl"}, Resource: Strings{"arn:q1", "arn:q2"}},
		{Sid: "Bucket", Effect: "Allow", Action: Strings{"s3:ListBucket"}, Resource: Strings{"arn:b"}},
	}}
	got := d.WithoutResource("arn:b").WithoutResource("arn:q1")
	if len(got.Statement) != 1 || got.Statement[0].Sid != "Queues" || len(got.Statement[0].Resource) != 1 || got.Statement[0].Resource[0] != "arn:q2" {
		t.Fatalf("narrowed to %+v", got)
	}
	if len(d.Statement[0].Resource) != 2 {
		t.Fatal("the original was changed")
	}
	if Evaluate(Request{Action: "sqs:GetQueueUrl", Resource: "arn:q1"}, got) != ImplicitDeny {
		t.Fatal("the dropped resource is still allowed")
	}
}
