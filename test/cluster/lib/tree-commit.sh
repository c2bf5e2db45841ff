# shellcheck shell=bash
# tree_commit DIR: the commit DIR's tree is at, short, with "+dirty" when the tree differs from it
# (the generated docs/conformance.md aside). Names what a build or a conformance run was made from.
tree_commit() {
  local dir=$1 commit
  commit=$(git -C "$dir" rev-parse --short=12 HEAD) || return 1
  [[ -z $(git -C "$dir" status --porcelain -- ':!docs/conformance.md') ]] || commit+="+dirty"
  echo "$commit"
}
