"""Runs AWS API calls through boto3 against local endpoints, for the wire tests.

Reads a JSON program on stdin:
  {"endpoints": {"redshift-data": url, "stepfunctions": url},
   "calls": [{"service": "redshift-data", "operation": "list_tables", "params": {...}},
             {"service": "redshift-data", "operation": "list_tables", "params": {...}, "paginate": {"PageSize": 2}}]}
and writes one JSON result per call on stdout, in order: {"response": ...}
(ResponseMetadata left out, timestamps as ISO 8601 text; a paginated call
gives its pages in "pages"), or {"error": {"code", "message"}} for a
ClientError. Retries are off: a server error is the call's answer.
"""
import datetime
import json
import sys

import boto3
import botocore.config
import botocore.exceptions


def plain(value):
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items() if key != "ResponseMetadata"}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def main():
    program = json.load(sys.stdin)
    config = botocore.config.Config(retries={"max_attempts": 1, "mode": "standard"})
    clients = {
        service: boto3.client(
            service,
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="AKIDLOCALBOTO3",
            aws_secret_access_key="local",
            config=config,
        )
        for service, url in program["endpoints"].items()
    }
    results = []
    for call in program["calls"]:
        client = clients[call["service"]]
        try:
            if "paginate" in call:
                paginator = client.get_paginator(call["operation"])
                pages = paginator.paginate(**call.get("params", {}), PaginationConfig=call["paginate"])
                results.append({"pages": [plain(page) for page in pages]})
            else:
                results.append({"response": plain(getattr(client, call["operation"])(**call.get("params", {})))})
        except botocore.exceptions.ClientError as error:
            results.append({"error": {"code": error.response["Error"]["Code"], "message": error.response["Error"].get("Message", "")}})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
