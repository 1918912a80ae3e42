package fakekube

// Request bodies: read within the real server's size limit and decoded (JSON,
// YAML or protobuf, as the Content-Type says) into the resource's kind.

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/yaml"
)

// maxBodyBytes is the real server's request size limit.
const maxBodyBytes = 3 * 1024 * 1024

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(body) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	}
	return body, nil
}

// decodeBody reads a JSON or YAML object of the resource's kind; with
// ?fieldValidation=Strict, unknown and duplicate fields are refused.
func (s *Server) decodeBody(r *http.Request, res *resource) (runtime.Object, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	info, err := serializerFor(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, err
	}
	if info.MediaType == runtime.ContentTypeProtobuf {
		return decodeWith(info.Serializer, body, res)
	}
	isYAML := info.MediaType != runtime.ContentTypeJSON
	return s.decodeObject(body, res, isYAML, r.URL.Query().Get("fieldValidation") == "Strict")
}

func (s *Server) decode(body []byte, res *resource, strict bool) (runtime.Object, error) {
	return s.decodeObject(body, res, false, strict)
}

// decodeObject decodes a JSON or YAML body into the resource's type and
// fails the way the real server does, with its messages: a body it cannot
// read is "unrecognized" (quoting the body's start), one of another type
// "cannot be handled".
func (s *Server) decodeObject(body []byte, res *resource, isYAML, strict bool) (runtime.Object, error) {
	want := res.gvk()
	data := body
	if isYAML {
		converted, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, unrecognized(want.Kind, errors.New(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")), body)
		}
		data = converted
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		return nil, unrecognized(want.Kind, fmt.Errorf("couldn't get version/kind; json parse error: %v", err), body)
	}
	got := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if tm.APIVersion == "" {
		got.Group, got.Version = want.Group, want.Version
	}
	if got.Kind == "" {
		got.Kind = want.Kind
	}
	if got.GroupVersion() != want.GroupVersion() {
		return nil, cannotHandle(got, want.Kind, fmt.Errorf("no kind %q is registered for version %q in scheme %q",
			got.Kind, got.GroupVersion().String(), "pkg/runtime/scheme.go:111"))
	}
	if got.Kind != want.Kind {
		return nil, cannotHandle(got, want.Kind, fmt.Errorf("converting (%s.%s) to (%s.%s): unknown conversion",
			got.Version, got.Kind, internalGroup(want.Group), want.Kind))
	}
	obj, err := scheme.New(want)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	ser := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme, kjson.SerializerOptions{Strict: strict})
	out, _, err := ser.Decode(data, &want, obj)
	if err != nil {
		return nil, cannotHandle(got, want.Kind, err)
	}
	return out, nil
}

func cannotHandle(got schema.GroupVersionKind, wantKind string, err error) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", got.Kind, got.Version, wantKind, err))
}

func unrecognized(wantKind string, err error, body []byte) error {
	return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", wantKind, err, summarize(body, 30)))
}

// summarize quotes the start of a body as the real server does: JSON as
// text, anything else in hex.
func summarize(data []byte, max int) string {
	more := ""
	if len(data) > max {
		data, more = data[:max], " ..."
	}
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		return string(data) + more
	default:
		return hex.EncodeToString(data) + more
	}
}

// internalGroup is the name of a group's internal package, which the real
// server's conversion errors name ("core" for the core group).
func internalGroup(group string) string {
	if group == "" {
		return "core"
	}
	return strings.Split(group, ".")[0]
}

// decodeInto decodes an options or subresource body (DeleteOptions,
// Binding) in whatever encoding the client sent it.
func decodeInto(r *http.Request, body []byte, into runtime.Object) error {
	info, err := serializerFor(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	if _, _, err := info.Serializer.Decode(body, nil, into); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded: %v", err))
	}
	return nil
}

// decodeWith decodes a protobuf body, which carries its own type.
func decodeWith(dec runtime.Decoder, body []byte, res *resource) (runtime.Object, error) {
	want := res.gvk()
	into, err := scheme.New(want)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	out, gvk, err := dec.Decode(body, &want, into)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request could not be decoded as %s: %v", want.Kind, err))
	}
	if *gvk != want {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request is a %s, not a %s", gvk.String(), want.String()))
	}
	return out, nil
}

// withTypeMeta returns obj with apiVersion and kind set, as the wire needs.
func withTypeMeta(res *resource, obj runtime.Object) runtime.Object {
	if obj.GetObjectKind().GroupVersionKind() == res.gvk() {
		return obj
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(res.gvk())
	return c
}
