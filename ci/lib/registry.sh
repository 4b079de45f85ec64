# shellcheck shell=bash
# A minimal OCI distribution (registry v2) client in curl + jq for ci/publish.sh: ping, read the
# SIF layer digest of a tag, delete a manifest. Handles anonymous, Basic and Bearer-token auth
# (GitLab's registry hands out tokens from its /jwt/auth realm). Credentials come from the shell
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
