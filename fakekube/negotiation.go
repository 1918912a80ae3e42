package fakekube

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The server speaks every encoding the scheme's codecs have: JSON, YAML and
// Kubernetes protobuf, which recent client-go prefers for built-in kinds.

// serializerFor picks the request body's serializer from its Content-Type.
func serializerFor(contentType string) (runtime.SerializerInfo, error) {
	if contentType == "" {
		contentType = runtime.ContentTypeJSON
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return runtime.SerializerInfo{}, unsupportedMediaType()
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return runtime.SerializerInfo{}, unsupportedMediaType()
	}
	return info, nil
}

func unsupportedMediaType() error {
	var types []string
	for _, info := range codecs.SupportedMediaTypes() {
		types = append(types, info.MediaType)
	}
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s",
			strings.Join(types, ", ")), 0, false)
}

// responseMedia is what a response is written as: an encoding and, when the
// client asked for one the server can give, the Table view of the object.
type responseMedia struct {
	info runtime.SerializerInfo
	// table is the Table's group version (meta.k8s.io/v1 or v1beta1), or
	// nil for the object itself.
	table *schema.GroupVersion
}

// negotiateResponse picks the encoding and view of a response to a GET or a
// write from the Accept header, as the real server does: the first clause
// it can satisfy; JSON when there is none.
func negotiateResponse(accept string) responseMedia { return negotiateMedia(accept, false) }

// negotiateWatch is negotiateResponse for a watch, whose encoding must also
// be able to frame a stream of events.
func negotiateWatch(accept string) responseMedia { return negotiateMedia(accept, true) }

// negotiateMedia walks the Accept clauses in order. A clause asking for a
// view ("as=...") is acceptable only if it is a Table of meta.k8s.io v1 or
// v1beta1 in JSON or YAML — the real server's restriction, so a client
// asking for a protobuf Table falls through to its next clause, as kubectl's
// header is built to do. PartialObjectMetadata views are not served: those
// clauses are skipped too.
func negotiateMedia(accept string, stream bool) responseMedia {
	for _, part := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		if params["as"] == "" && (mediaType == "*/*" || mediaType == "application/*") {
			break
		}
		info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
		if !ok || (stream && info.StreamSerializer == nil) {
			continue
		}
		if params["as"] == "" {
			return responseMedia{info: info}
		}
		if gv, ok := tableView(mediaType, params); ok {
			return responseMedia{info: info, table: &gv}
		}
	}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return responseMedia{info: info}
}

// tableView reports whether an Accept clause asks for a Table the server can
// give, and of which group version.
func tableView(mediaType string, params map[string]string) (schema.GroupVersion, bool) {
	gv := schema.GroupVersion{Group: params["g"], Version: params["v"]}
	if params["as"] != "Table" || (gv != metav1.SchemeGroupVersion && gv != metav1beta1.SchemeGroupVersion) {
		return schema.GroupVersion{}, false
	}
	return gv, mediaType == runtime.ContentTypeJSON || mediaType == runtime.ContentTypeYAML
}
