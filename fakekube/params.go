package fakekube

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// readVerb is the kind of read a GET request is.
type readVerb int

const (
	readGet readVerb = iota
	readList
	readWatch
)

// checkReadParams refuses the query parameters of a get, list or watch
// that the real server refuses, with its status and words:
// integer parameters that are not integers (400, from the conversion of
// the query into ListOptions), a continue token it cannot decode (400,
// apiserver/pkg/storage/continue.go), and a resourceVersion that is not
// a number (400 for a list; 500 without a reason for a get or watch,
// where the storage layer's error reaches the client as it is —
// apiserver/pkg/storage/etcd3 and cacher).
func checkReadParams(verb readVerb, q map[string][]string) error {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if verb != readGet {
		for _, k := range []string{"limit", "timeoutSeconds"} {
			if v := get(k); v != "" {
				if _, err := strconv.ParseInt(v, 10, 64); err != nil {
					return apierrors.NewBadRequest(err.Error())
				}
			}
		}
	}
	if verb != readGet {
		if errs := listOptionErrors(verb, get("resourceVersion"), get("resourceVersionMatch"), isTrue(get("sendInitialEvents"))); len(errs) > 0 {
			return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", errs)
		}
	}
	if verb == readList {
		if c := get("continue"); c != "" {
			if err := checkContinue(c); err != nil {
				return err
			}
		}
	}
	rv := get("resourceVersion")
	if rv == "" {
		return nil
	}
	if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
		msg := field.Invalid(field.NewPath("resourceVersion"), rv, err.Error()).Error()
		if verb == readList {
			return apierrors.NewBadRequest("invalid resource version: " + msg)
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Message: msg}}
	}
	return nil
}

// listOptionErrors are the real server's checks of resourceVersionMatch
// (apimachinery pkg/apis/meta/internalversion/validation,
// ValidateListOptions): a list needs a resourceVersion with it, and not
// "0" for Exact; a watch takes only NotOlderThan, with sendInitialEvents
// (whose own rule the watch handler checks).
func listOptionErrors(verb readVerb, rv, match string, sendInitialEvents bool) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("resourceVersionMatch")
	if match == "" {
		return nil
	}
	if verb == readWatch {
		if sendInitialEvents {
			return nil
		}
		errs = append(errs, field.Forbidden(p, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
		if match != string(metav1.ResourceVersionMatchNotOlderThan) {
			errs = append(errs, field.NotSupported(p, match, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
		}
		return errs
	}
	if rv == "" {
		errs = append(errs, field.Forbidden(p, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
	}
	switch metav1.ResourceVersionMatch(match) {
	case metav1.ResourceVersionMatchExact:
		if rv == "0" {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("resourceVersionMatch %q is forbidden for resourceVersion %q", "exact", rv)))
		}
	case metav1.ResourceVersionMatchNotOlderThan:
	default:
		errs = append(errs, field.NotSupported(p, match, []string{string(metav1.ResourceVersionMatchExact),
			string(metav1.ResourceVersionMatchNotOlderThan), ""}))
	}
	return errs
}

// continueToken is what a list's continue token encodes (base64, no
// padding, of this JSON).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// tokenVersion is the only continue token version the real server reads.
const tokenVersion = "meta.k8s.io/v1"

// continueTooOld is the real server's answer to a continue token whose
// list it can no longer continue (apiserver/pkg/storage/errors.go,
// NewExpiredError wording via the etcd3 store).
const continueTooOld = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to " +
	"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
	"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

// checkContinue refuses a continue token as the real server does. fakekube
// never cuts a list into pages, so it hands out no token, and a
// well-formed one names a list it cannot continue: 410, as the real
// server answers a token whose resourceVersion was compacted away.
func checkContinue(c string) error {
	invalid := func(detail string) error {
		return apierrors.NewBadRequest("invalid continue token: continue key is not valid: " + detail)
	}
	data, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return invalid(err.Error())
	}
	var tok continueToken
	if err := json.Unmarshal(data, &tok); err != nil {
		return invalid(err.Error())
	}
	if tok.APIVersion != tokenVersion {
		return invalid(fmt.Sprintf("server does not recognize this encoded version %s", tok.APIVersion))
	}
	return apierrors.NewResourceExpired(continueTooOld)
}

// writeParams are what the query of a create, update or patch says of
// its field management: who writes (fieldManager) and, for server-side
// apply, whether to take fields other managers hold (force).
type writeParams struct {
	fieldManager string
	force        bool
}

// writeParamsOf reads and checks a write's query parameters as the real
// handlers do (k8s.io/apiserver pkg/endpoints/handlers create.go,
// update.go, patch.go): decoded into its CreateOptions, UpdateOptions or
// PatchOptions (400 if they do not decode), then validated (422 on that
// options kind: a fieldManager too long or unprintable, an apply patch
// without one, force on any other patch). patchType is "" for a create
// or an update, which verb tells apart.
func writeParamsOf(r *http.Request, verb string, patchType types.PatchType) (writeParams, error) {
	q := r.URL.Query()
	var kind string
	var errs field.ErrorList
	var p writeParams
	var err error
	switch {
	case patchType != "":
		kind = "PatchOptions"
		opts := metav1.PatchOptions{}
		if err = metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err == nil {
			errs = metav1validation.ValidatePatchOptions(&opts, patchType)
			p = writeParams{fieldManager: opts.FieldManager, force: opts.Force != nil && *opts.Force}
		}
	case verb == "create":
		kind = "CreateOptions"
		opts := metav1.CreateOptions{}
		if err = metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err == nil {
			errs = metav1validation.ValidateCreateOptions(&opts)
			p = writeParams{fieldManager: opts.FieldManager}
		}
	default:
		kind = "UpdateOptions"
		opts := metav1.UpdateOptions{}
		if err = metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err == nil {
			errs = metav1validation.ValidateUpdateOptions(&opts)
			p = writeParams{fieldManager: opts.FieldManager}
		}
	}
	if err != nil {
		return p, apierrors.NewBadRequest(err.Error())
	}
	if len(errs) > 0 {
		return p, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	return p, nil
}

// manager is the field manager of a write with these parameters from a
// client with this user agent.
func (p writeParams) manager(userAgent string) string { return managerOf(p.fieldManager, userAgent) }
