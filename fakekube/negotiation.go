package fakekube

import (
	"fmt"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
		return runtime.SerializerInfo{}, unsupportedMediaType(contentType)
	}
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return runtime.SerializerInfo{}, unsupportedMediaType(contentType)
	}
	return info, nil
}

func unsupportedMediaType(ct string) error {
	var types []string
	for _, info := range codecs.SupportedMediaTypes() {
		types = append(types, info.MediaType)
	}
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schema.GroupResource{}, "",
		fmt.Sprintf("the body of the request was in an unknown format %q - accepted media types include: %s",
			ct, strings.Join(types, ", ")), 0, false)
}

// negotiate picks the response encoding from the Accept header: the first
// acceptable media type the server has; JSON when there is none.
func negotiate(accept string) runtime.SerializerInfo {
	for _, part := range strings.Split(accept, ",") {
		mediaType, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		// Table and PartialObjectMetadata views are not served yet: skip
		// them, so the client falls back to the plain object it also accepts.
		if params["as"] != "" {
			continue
		}
		if mediaType == "*/*" || mediaType == "application/*" {
			break
		}
		if info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType); ok {
			return info
		}
	}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return info
}
