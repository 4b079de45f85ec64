# shellcheck shell=bash
# A minimal OCI distribution (registry v2) client in curl + jq for ci/publish.sh and
# ci/functional.sh: ping, read the SIF layer digest of a tag, delete a manifest. Handles
# anonymous, Basic and Bearer-token auth (GitLab's registry hands out tokens from its /jwt/auth realm). Credentials come from the shell
# variables REG_USER / REG_PASS and reach curl on stdin (-K -), never on its command line.
#
# Settings (shell variables): REG_HOST (host[:port]), REG_SCHEME (https|http), REG_USER, REG_PASS.
# REG_CODE holds the last HTTP status, REG_BODY / REG_HEADERS the files of the last answer.

readonly REG_SIF_LAYER=application/vnd.sylabs.sif.layer.v1.sif
readonly REG_ACCEPT='application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'
REG_CODE=000
REG_BODY=${REG_BODY:-}
REG_HEADERS=${REG_HEADERS:-}

# _reg_quote TEXT : TEXT as a double-quoted curl config string.
_reg_quote() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$s"
}

# _reg_curl METHOD URL CONFIG : one request; CONFIG (curl config text) goes on stdin.
# Sets REG_CODE; returns curl's exit status.
_reg_curl() {
  local method=$1 url=$2 config=$3 rc=0
  : >"$REG_BODY"
  : >"$REG_HEADERS"
  REG_CODE=$(curl -sS --connect-timeout "${REG_CONNECT_TIMEOUT:-10}" --max-time "${REG_MAX_TIME:-120}" \
    -X "$method" -o "$REG_BODY" -D "$REG_HEADERS" -w '%{http_code}' -K - "$url" <<<"$config") || rc=$?
  [[ -n $REG_CODE ]] || REG_CODE=000
  return "$rc"
}

# _reg_header NAME : the value of header NAME in the last answer (case-insensitive, CR stripped).
_reg_header() {
  local name=${1,,} line
  while IFS= read -r line; do
    line=${line%$'\r'}
    if [[ ${line,,} == "$name:"* ]]; then
      line=${line#*:}
      printf '%s\n' "${line# }"
    fi
  done <"$REG_HEADERS"
}

# _reg_challenge_param HEADER NAME : NAME="value" from a WWW-Authenticate header.
_reg_challenge_param() {
  local re="$2=\"([^\"]*)\""
  [[ $1 =~ $re ]] && printf '%s\n' "${BASH_REMATCH[1]}"
}

# _reg_basic_config : the curl config lines for Basic auth (empty without credentials).
_reg_basic_config() {
  [[ -n ${REG_USER:-} ]] || return 0
  printf 'user = %s\n' "$(_reg_quote "$REG_USER:${REG_PASS:-}")"
}

# reg_request METHOD PATH [EXTRA_CONFIG] : a request to REG_SCHEME://REG_HOST/PATH, answering an
# auth challenge once. Returns 0 with REG_CODE set when the registry answered, 1 when unreachable.
reg_request() {
  local method=$1 path=$2 extra=${3:-} url challenge realm service scope token_url token
  url="$REG_SCHEME://$REG_HOST/$path"
  _reg_curl "$method" "$url" "$extra" || return 1
  [[ $REG_CODE == 401 ]] || return 0
  challenge=$(_reg_header www-authenticate | head -n1)
  case ${challenge,,} in
    basic*)
      _reg_curl "$method" "$url" "$extra"$'\n'"$(_reg_basic_config)" || return 1
      ;;
    bearer*)
      realm=$(_reg_challenge_param "$challenge" realm) || return 0
      service=$(_reg_challenge_param "$challenge" service || true)
      scope=$(_reg_challenge_param "$challenge" scope || true)
      token_url="$realm?service=$(jq -rn --arg s "$service" '$s|@uri')"
      [[ -z $scope ]] || token_url+="&scope=$(jq -rn --arg s "$scope" '$s|@uri')"
      _reg_curl GET "$token_url" "$(_reg_basic_config)" || return 1
      [[ $REG_CODE == 200 ]] || { REG_CODE=401; return 0; }
      token=$(jq -r '.token // .access_token // empty' "$REG_BODY")
      [[ -n $token ]] || { REG_CODE=401; return 0; }
      _reg_curl "$method" "$url" "$extra"$'\n'"header = $(_reg_quote "Authorization: Bearer $token")" || return 1
      ;;
  esac
  return 0
}

# reg_ping : 0 registry answers and accepts us, 1 unreachable, 3 credentials refused.
reg_ping() {
  reg_request GET v2/ || return 1
  case $REG_CODE in
    200) return 0 ;;
    401 | 403) return 3 ;;
    *) return 1 ;;
  esac
}

# reg_split REF : sets REG_REPO and REG_TAG from host/repo/path:tag (REG_HOST must be its prefix).
reg_split() {
  local ref=${1#oras://} rest
  rest=${ref#"$REG_HOST"/}
  REG_REPO=${rest%:*}
  REG_TAG=${rest##*:}
}

# reg_sif_digest REF : print the SIF layer digest (sha256:...) of REF.
# Returns 0 found, 5 no such tag, 1 unreachable or unexpected answer, 3 refused.
reg_sif_digest() {
  reg_split "$1"
  reg_request GET "v2/$REG_REPO/manifests/$REG_TAG" "header = $(_reg_quote "Accept: $REG_ACCEPT")" || return 1
  case $REG_CODE in
    200) ;;
    404) return 5 ;;
    401 | 403) return 3 ;;
    *) return 1 ;;
  esac
  REG_MANIFEST_DIGEST=$(_reg_header docker-content-digest | head -n1)
  jq -er --arg mt "$REG_SIF_LAYER" '[.layers[]? | select(.mediaType == $mt) | .digest][0] // empty' "$REG_BODY" ||
    return 1
}

# reg_delete REF : delete the manifest REF's tag points at (after reg_sif_digest set
# REG_MANIFEST_DIGEST). 0 deleted, 1 the registry refused or failed.
reg_delete() {
  reg_split "$1"
  [[ -n ${REG_MANIFEST_DIGEST:-} ]] || return 1
  reg_request DELETE "v2/$REG_REPO/manifests/$REG_MANIFEST_DIGEST" || return 1
  [[ $REG_CODE == 202 || $REG_CODE == 200 ]]
}

# --- credentials (shared by ci/publish.sh and ci/functional.sh) ---------------------------------

# norm_image R : R without oras:// and trailing '/', lower case (as references are written).
norm_image() {
  local r=${1#oras://}
  r=${r%/}
  printf '%s\n' "${r,,}"
}

# registry_credentials REGISTRY_IMAGE : set REG_USER and REG_PASS. AFKIT_REGISTRY_* first; GitLab's
# job token only for the project's own registry (CI_REGISTRY_IMAGE or below, on host CI_REGISTRY).
registry_credentials() {
  local target own
  target=$(norm_image "$1")
  if [[ -n ${AFKIT_REGISTRY_USER:-}${AFKIT_REGISTRY_PASSWORD:-} ]]; then
    REG_USER=${AFKIT_REGISTRY_USER:-} REG_PASS=${AFKIT_REGISTRY_PASSWORD:-}
  elif [[ -n ${CI_REGISTRY_USER:-}${CI_JOB_TOKEN:-} ]]; then
    own=$(norm_image "${CI_REGISTRY_IMAGE:-}")
    if [[ -z $own || ($target != "$own" && $target != "$own"/*) ||
      (-n ${CI_REGISTRY:-} && ${target%%/*} != "$(norm_image "$CI_REGISTRY")") ]]; then
      die "$AFKIT_EX_UNSAFE" "refusing to send the job token to $target: it is not this project's registry (${own:-CI_REGISTRY_IMAGE unset})" \
        "publish elsewhere with AFKIT_REGISTRY_IMAGE, AFKIT_REGISTRY_USER and AFKIT_REGISTRY_PASSWORD (masked, protected)"
    fi
    REG_USER=${CI_REGISTRY_USER:-} REG_PASS=${CI_JOB_TOKEN:-}
  else
    REG_USER='' REG_PASS=''
  fi
  if [[ -n $REG_USER && -z $REG_PASS ]] || [[ -z $REG_USER && -n $REG_PASS ]]; then
    die "$AFKIT_EX_USAGE" "a registry user without a password or the other way round" \
      "set both CI_REGISTRY_USER and CI_JOB_TOKEN (or AFKIT_REGISTRY_USER/AFKIT_REGISTRY_PASSWORD), or neither"
  fi
}

# reg_check_registry_image R SCRIPT : die (usage) unless R is HOST[:PORT][/PATH] (oras:// allowed).
reg_check_registry_image() {
  [[ -n $1 ]] ||
    die "$AFKIT_EX_USAGE" "no registry given" "pass --registry-image HOST/PATH or set AFKIT_REGISTRY_IMAGE or CI_REGISTRY_IMAGE (see '$2 --help')"
  [[ ${1#oras://} =~ ^[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._/-]+)?$ ]] ||
    die "$AFKIT_EX_USAGE" "bad registry image '$1'" "expected HOST[:PORT]/PATH, e.g. gitlab.example.org:5050/group/project"
}

# reg_target REF : REG_HOST and REG_SCHEME of oras://HOST/...; REG_APPTAINER_ARGS gets --no-https
# with AFKIT_REGISTRY_INSECURE=1 (a test registry on localhost only).
REG_APPTAINER_ARGS=()
reg_target() {
  REG_HOST=${1#oras://}
  REG_HOST=${REG_HOST%%/*}
  REG_SCHEME=https
  REG_APPTAINER_ARGS=()
  if [[ ${AFKIT_REGISTRY_INSECURE:-0} == 1 ]]; then
    REG_SCHEME=http
    REG_APPTAINER_ARGS=(--no-https)
    warn "plain HTTP to $REG_HOST (AFKIT_REGISTRY_INSECURE=1)"
  fi
}

# reg_check_access : die 3 unless the registry answers and accepts the credentials (REG_BODY and
# REG_HEADERS must name private files).
reg_check_access() {
  local rc=0
  reg_ping || rc=$?
  case $rc in
    0) ;;
    3) die "$AFKIT_EX_PREREQ" "the registry $REG_HOST refused the credentials (HTTP $REG_CODE)" "check CI_REGISTRY_USER / CI_JOB_TOKEN (or AFKIT_REGISTRY_USER / AFKIT_REGISTRY_PASSWORD)" ;;
    *) die "$AFKIT_EX_PREREQ" "the registry $REG_SCHEME://$REG_HOST is unreachable or not an OCI registry (HTTP $REG_CODE)" "check CI_REGISTRY_IMAGE and the runner's network" ;;
  esac
}

# reg_apptainer_login AUTHFILE : log in to REG_HOST; the password goes on stdin. The login is
# stored in AUTHFILE and in a private remote.yaml beside it (apptainer would otherwise also write it
# to ~/.apptainer/remote.yaml of the runner's user); the caller removes both at exit. apptainer does
# not check the credentials: reg_check_access did. Adds --authfile to REG_APPTAINER_ARGS.
reg_apptainer_login() {
  local authfile=$1
  [[ -n ${REG_USER:-} ]] || return 0
  printf '%s' "$REG_PASS" | apptainer registry --config "${authfile%/*}/remote.yaml" login \
    --authfile "$authfile" --username "$REG_USER" --password-stdin "oras://$REG_HOST" >/dev/null 2>&1 ||
    die "$AFKIT_EX_PREREQ" "apptainer registry login to $REG_HOST failed" "check the registry credentials (CI_REGISTRY_USER / CI_JOB_TOKEN)"
  REG_APPTAINER_ARGS+=(--authfile "$authfile")
}
