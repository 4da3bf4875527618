"""boto3 against a local CloudWatch endpoint, for test/local/cloudwatch-clients.test.ts.

  python3 cloudwatch-boto3.py model DIR PROTOCOL  writes botocore's CloudWatch model, set to PROTOCOL
                                                  alone, under DIR (for AWS_DATA_PATH): `query` is
                                                  what botocore before 1.42.7 sends
  python3 cloudwatch-boto3.py run ENDPOINT T0     the calls a user makes; prints what boto3 read, as JSON
"""
import datetime
import gzip
import json
import os
import sys


def model_of(directory, protocol):
    import botocore

    source = os.path.join(os.path.dirname(botocore.__file__), 'data', 'cloudwatch', '2010-08-01', 'service-2.json.gz')
    with gzip.open(source) as f:
        model = json.load(f)
    model['metadata']['protocol'] = protocol
    model['metadata']['protocols'] = [protocol]
    target = os.path.join(directory, 'cloudwatch', '2010-08-01')
    os.makedirs(target, exist_ok=True)
    with open(os.path.join(target, 'service-2.json'), 'w') as f:
        json.dump(model, f)


def run(endpoint, t0_iso):
    import boto3

    t0 = datetime.datetime.fromisoformat(t0_iso.replace('Z', '+00:00'))
    minute = datetime.timedelta(minutes=1)
    client = boto3.client('cloudwatch', endpoint_url=endpoint, region_name='us-east-1', aws_access_key_id='local', aws_secret_access_key='local')
    content_types = set()
    client.meta.events.register('after-call.cloudwatch', lambda http_response, **_: content_types.add(http_response.headers.get('content-type')))
    out = {'protocol': client.meta.service_model.resolved_protocol}

    client.put_metric_data(
        Namespace='Boto',
        MetricData=[{'MetricName': 'Age', 'Dimensions': [{'Name': 'Pipeline', 'Value': f'p{i}'}], 'Timestamp': t0 - 5 * minute, 'Value': i + 0.5} for i in range(3)],
    )
    out['metrics'] = sorted(m['Dimensions'][0]['Value'] for m in client.list_metrics(Namespace='Boto', MetricName='Age')['Metrics'])
    pages = list(client.get_paginator('describe_alarms').paginate(AlarmTypes=['MetricAlarm'], PaginationConfig={'PageSize': 2}))
    out['alarmPages'] = [[a['AlarmName'] for a in page['MetricAlarms']] for page in pages]
    out['stateUpdated'] = pages[0]['MetricAlarms'][0]['StateUpdatedTimestamp'].isoformat()
    stats = client.get_metric_statistics(
        Namespace='Boto', MetricName='Age', Dimensions=[{'Name': 'Pipeline', 'Value': 'p2'}], StartTime=t0 - 10 * minute, EndTime=t0, Period=60, Statistics=['Sum', 'SampleCount']
    )
    out['datapoints'] = [{'Timestamp': d['Timestamp'].isoformat(), 'Sum': d['Sum'], 'SampleCount': d['SampleCount']} for d in stats['Datapoints']]
    try:
        client.get_metric_statistics(Namespace='Boto', MetricName='Age', StartTime=t0, EndTime=t0 - minute, Period=60, Statistics=['Sum'])
    except client.exceptions.InvalidParameterValueException as e:
        out['error'] = {'class': type(e).__name__, 'code': e.response['Error']['Code'], 'message': e.response['Error']['Message'], 'status': e.response['ResponseMetadata']['HTTPStatusCode']}
    out['contentTypes'] = sorted(content_types)
    print(json.dumps(out))


if __name__ == '__main__':
    if sys.argv[1] == 'model':
        model_of(sys.argv[2], sys.argv[3])
    else:
        run(sys.argv[2], sys.argv[3])
