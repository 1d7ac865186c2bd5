# The image's revision and source labels (sourced by scripts/image.sh; tested by scripts/image_labels_test.ts).
# The source is the git remote `origin` with any user name and password taken out: a CI checkout's remote carries
# its job token (https://gitlab-ci-token:<token>@host/...), and a label is readable by anyone who can pull the image.

# The commit checked out, or "unknown" (no repository, or one without a commit: `git rev-parse HEAD` then printed
# "HEAD" before failing, and the label broke the Containerfile).
image_revision() {
  git rev-parse --verify --quiet HEAD 2>/dev/null || echo unknown
}

# ATS_IMAGE_SOURCE, else the remote `origin`, without userinfo; "unknown" when there is none.
image_source() {
  local url="${ATS_IMAGE_SOURCE:-$(git remote get-url origin 2>/dev/null || echo unknown)}"
  # scheme://user:password@host/... → scheme://host/... (an scp-like git@host:path names no secret and stays).
  printf '%s\n' "$url" | sed -E 's#^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@#\1#'
}
