# `make help`'s printer. mode=targets: the `target: ## description` lines of the makefiles given, listed by the
# groups in `groups` ("Title=t1 t2;Title=..."), each line at most `width` characters (a description cut at its last
# clause that fits); a target in no group is listed under "Other", so none is lost. mode=wrap: standard input's lines
# wrapped to `width`, each continuation indented as the variables' listing is.
function fit(text, room,    cut, i) {
    if (length(text) <= room) return text
    cut = 0
    for (i = room; i > 1; i--) {
        if (substr(text, i, 2) == "; " || substr(text, i, 2) == " (") { cut = i - 1; break }
    }
    if (cut == 0) for (i = room; i > 1; i--) if (substr(text, i, 1) == " ") { cut = i - 1; break }
    return substr(text, 1, cut)
}
function wrap(line,    indent, out, n, i, words) {
    indent = "             "
    if (line !~ /^  /) { print line; return }
    n = split(substr(line, 14), words, " ")
    out = substr(line, 1, 13) words[1]
    for (i = 2; i <= n; i++) {
        if (length(out) + 1 + length(words[i]) > width) { print out; out = indent words[i] }
        else out = out " " words[i]
    }
    print out
}
BEGIN { if (width == "") width = 100 }
mode == "wrap" { wrap($0); next }
/^[a-zA-Z0-9_-]+:.*## / {
    name = $0; sub(/:.*/, "", name)
    text = $0; sub(/^[^#]*## /, "", text)
    if (!(name in desc)) { desc[name] = text; order[++count] = name }
}
END {
    if (mode == "wrap") exit
    ngroups = split(groups, parts, ";")
    for (g = 1; g <= ngroups; g++) {
        sub(/^ +/, "", parts[g])
        split(parts[g], kv, "=")
        print kv[1] ":"
        n = split(kv[2], names, " ")
        for (i = 1; i <= n; i++) {
            if (!(names[i] in desc)) continue
            printf "  %-16s %s\n", names[i], fit(desc[names[i]], width - 19)
            shown[names[i]] = 1
        }
    }
    other = 0
    for (i = 1; i <= count; i++) {
        if (order[i] in shown) continue
        if (!other++) print "Other:"
        printf "  %-16s %s\n", order[i], fit(desc[order[i]], width - 19)
    }
}
