#!/usr/bin/env bash
# The documents against the tree: the README fits its budget, every link
# between them reaches a file and a heading, the layout in docs/design.md
# names every source file and no file that is gone, history stays in NEWS,
# and docs/performance.md is a make bench run's, its charts beside it.
. "$(dirname "$0")/lib.bash"
cd "$ROOT" || exit 1

lines=$(wc -l <README.md)
check "README.md is at most 250 lines ($lines)" [ "$lines" -le 250 ]

# slugs FILE: its headings' anchors, as GitHub makes them.
slugs() {
	awk '/^```/ { code = !code } !code && /^#+ / {
		sub(/^#+ /, ""); s = tolower($0); gsub(/[^a-z0-9 _-]/, "", s); gsub(/ /, "-", s); print s }' "$1"
}
bad=
for doc in README.md docs/*.md; do
	dir=$(dirname "$doc")
	while read -r link; do
		file=${link%%#*} anchor=
		[[ $link == *#* ]] && anchor=${link#*#}
		target=$doc
		[[ -n $file ]] && target=$dir/$file
		if [[ ! -e $target ]]; then
			bad+=" $doc→$link"
		elif [[ -n $anchor && $target == *.md ]] && ! slugs "$target" | grep -qx -- "$anchor"; then
			bad+=" $doc→$link"
		fi
	done < <(grep -oE '\]\([^)]+\)' "$doc" | sed -E 's/^\]\(//; s/\)$//' | grep -vE '^[a-z]+:')
done
check "every link in README.md and docs/ reaches a file and a heading${bad:+ (broken:$bad)}" [ -z "$bad" ]

layout=$(awk '/^## Layout/ { on = 1 } on' docs/design.md)
names=$(tr -s ' \t()`,' '\n' <<<"$layout" | grep -E '^[a-z_@.0-9-]+\.(c|h|lua|sh|bash|service|8|conf|bash-completion)$' | sort -u)
missing=
# A header is named with its .c; the tests by their directories.
for f in $(find bpf user tools dist -type f | sort); do
	base=${f##*/}
	grep -qxF "$base" <<<"$names" || { [[ $base == *.h ]] && grep -qxF "${base%.h}.c" <<<"$names"; } ||
		missing+=" $f"
done
for d in $(ls -d tests/*/ | sed 's|^tests/||'); do
	grep -qE "(^| )$d( |$)" <<<"$layout" || missing+=" tests/$d"
done
check "the layout in docs/design.md names every source file${missing:+ (missing:$missing)}" [ -z "$missing" ]
gone=
for name in $names; do
	[[ -n $(find bpf user tools tests dist -name "$name" -print -quit) ]] || gone+=" $name"
done
check "every file the layout names exists${gone:+ (gone:$gone)}" [ -z "$gone" ]

history=$(grep -n -i -E "until this build|the build before|this build's|(first|last) build|previous build" README.md docs/*.md)
check "no history outside NEWS${history:+ ($history)}" [ -z "$history" ]

check "docs/performance.md says it is assembled from the sections' latest runs" \
	grep -q '^Written by `make bench`.* from the latest run of each' docs/performance.md
for png in $(grep -oE '\(performance/[a-z_]+\.png\)' docs/performance.md | tr -d '()'); do
	check "its chart docs/$png is there" [ -s "docs/$png" ]
done
check "and it is no smoke run" bash -c "! grep -q 'smoke run' docs/performance.md"
summary
