#!/usr/bin/env python3
"""Validate diagnose/v1 reports against docs/report.schema.json.

usage: validate_schema.py SCHEMA REPORT.json...

Prints one line per invalid file (file, JSON path and message of its first error) and exits 1 when
any file is invalid or unreadable, 2 on a usage error or an invalid schema, 0 when all validate.
Uses only what python3-jsonschema 4.10 (Debian 12) provides; the schema is draft-07.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate_schema.py: python3 module jsonschema not found (Debian: python3-jsonschema)", file=sys.stderr)
    sys.exit(2)


def json_path(error):
    path = "$"
    for part in error.absolute_path:
        path += "[%d]" % part if isinstance(part, int) else "." + str(part)
    return path


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    schema_path, reports = argv[1], argv[2:]
    try:
        with open(schema_path, encoding="utf-8") as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except (OSError, ValueError, jsonschema.exceptions.SchemaError) as e:
        print("%s: invalid schema: %s" % (schema_path, e), file=sys.stderr)
        return 2
    validator = cls(schema)
    failed = 0
    for path in reports:
        try:
            with open(path, encoding="utf-8") as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            print("%s: cannot read a JSON document: %s" % (path, e))
            failed += 1
            continue
        errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
        if errors:
            first = errors[0]
            more = " (%d more)" % (len(errors) - 1) if len(errors) > 1 else ""
            print("%s: %s: %s%s" % (path, json_path(first), first.message, more))
            failed += 1
    print("%d of %d reports valid" % (len(reports) - failed, len(reports)), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
