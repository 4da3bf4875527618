import { ArnFormat, Stack, Validations } from 'aws-cdk-lib';
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type { ISecret } from 'aws-cdk-lib/aws-secretsmanager';
import type { IConstruct } from 'constructs';
import type { WarehouseTarget as DomainWarehouseTarget } from '../domain/warehouse-target.ts';

/**
 * The warehouse target as the stack takes it: the strings of
 * domain/warehouse-target.ts (validated there, and there turned into the
 * handlers' environment), plus the credentials secret as a construct.
 */
export interface WarehouseTarget extends DomainWarehouseTarget {
  /**
   * Secret with the database credentials, as a construct (for a secret
   * defined or imported in CDK code). The functions may read it, and the
   * Data API authenticates as the secret's database user. Mutually exclusive
   * with `secretArn`, which the stack imports with `Secret.fromSecretCompleteArn`.
   * @default - none: `secretArn`, `dbUser` or (with a workgroup) the functions' IAM identity
   */
  readonly secret?: ISecret;
  /**
   * ARN of the customer-managed KMS key the secret is encrypted with
   * (`arn:aws:kms:<region>:<account>:key/<key id>`, not an alias). Reading
   * such a secret needs `kms:Decrypt` on the key as well; the functions get it
   * only through Secrets Manager (`kms:ViaService`). Deployment only.
   * @default - none: the secret uses the AWS managed key `aws/secretsmanager`, which needs no grant
   */
  readonly secretKmsKeyArn?: string;
}

/**
 * Least privilege for the Data API: submit statements only to this warehouse;
 * describe, read and cancel only statements this role submitted; list the
 * role's own statements (LoadChunk finds an earlier load of its chunk by
 * name); get credentials only for this database (or read only the
 * one secret, and decrypt it only through Secrets Manager). Returns the
 * grants as one, as CDK's grant methods do.
 */
export function grantWarehouseAccess(grantee: IGrantable & IConstruct & { readonly roleId: string }, target: WarehouseTarget): Grant {
  const stack = Stack.of(grantee);
  const grants: Grant[] = [];
  const redshiftArn = (resource: string, resourceName: string): string =>
    stack.formatArn({ service: 'redshift', resource, resourceName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
  // Without the ID we can only name every workgroup of the account and region.
  const workgroupArn =
    target.workgroupArn ??
    stack.formatArn({ service: 'redshift-serverless', resource: 'workgroup', resourceName: '*', arnFormat: ArnFormat.SLASH_RESOURCE_NAME });
  const warehouseArn = target.workgroupName ? workgroupArn : redshiftArn('cluster', target.clusterIdentifier!);

  grants.push(
    Grant.addToPrincipal({
      grantee,
      actions: ['redshift-data:ExecuteStatement', 'redshift-data:BatchExecuteStatement'],
      resourceArns: [warehouseArn],
    }),
  );
  if (target.workgroupName && !target.workgroupArn) {
    Validations.of(grantee).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:redshift-serverless:<AWS::Region>:<AWS::AccountId>:workgroup/*]',
      reason:
        'IAM names a Redshift Serverless workgroup by its id, which the stack is not given (warehouse.workgroupArn unset): ' +
        'ExecuteStatement and GetCredentials are scoped to the workgroups of this account and region. Set warehouse.workgroupArn to scope them to one.',
    });
  }
  // These actions have no resource type; the owner condition limits them to
  // the statements of this role. A statement's owner is the aws:userid that
  // submitted it, `<role id>:<session name>`, and Lambda names the session
  // after the function: RecordFailure and CancelOrphans describe and cancel
  // the INSERTs LoadChunk submitted, so the condition names every session of
  // the role (AWS's own example, `${aws:userid}`, is one function only).
  // https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonredshiftdataapi.html
  // https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-userid
  grants.push(
    Grant.addToPrincipal({
      grantee,
      actions: ['redshift-data:DescribeStatement', 'redshift-data:GetStatementResult', 'redshift-data:CancelStatement'],
      resourceArns: ['*'],
      conditions: { StringLike: { 'redshift-data:statement-owner-iam-userid': `${grantee.roleId}:*` } },
    }),
  );

  // LoadChunk, RecordFailure and CancelOrphans find a chunk's load by its
  // statement name. ListStatements has no resource type and no
  // statement-owner condition key; it lists only the caller's statements
  // (RoleLevel: those of its IAM role).
  // https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonredshiftdataapi.html
  // https://docs.aws.amazon.com/redshift-data/latest/APIReference/API_ListStatements.html
  grants.push(Grant.addToPrincipal({ grantee, actions: ['redshift-data:ListStatements'], resourceArns: ['*'] }));
  Validations.of(grantee).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'redshift-data:DescribeStatement, GetStatementResult, CancelStatement and ListStatements have no resource type, so IAM takes only Resource "*"; ' +
      'the condition redshift-data:statement-owner-iam-userid like "<role id>:*" limits the first three to statements this role submitted ' +
      "(from any of its functions: the steps that cancel describe and cancel the loads of another), and ListStatements lists only the role's own.",
  });

  if (target.secret) {
    // Cluster or workgroup: the Data API reads the secret with the caller's
    // credentials (GetSecretValue, nothing more) and logs in as its user.
    grants.push(Grant.addToPrincipal({ grantee, actions: ['secretsmanager:GetSecretValue'], resourceArns: [target.secret.secretArn] }));
    const keyArn = target.secretKmsKeyArn ?? target.secret.encryptionKey?.keyArn;
    if (keyArn) {
      // Secrets Manager decrypts it with the caller's credentials too: only through Secrets Manager in this region.
      grants.push(
        Grant.addToPrincipal({
          grantee,
          actions: ['kms:Decrypt'],
          resourceArns: [keyArn],
          conditions: { StringEquals: { 'kms:ViaService': `secretsmanager.${stack.region}.${stack.urlSuffix}` } },
        }),
      );
    }
  } else if (target.workgroupName) {
    // Without a secret the Data API gets temporary credentials for the role's own database user.
    grants.push(Grant.addToPrincipal({ grantee, actions: ['redshift-serverless:GetCredentials'], resourceArns: [workgroupArn] }));
  } else if (target.dbUser) {
    // Data API with DbUser calls GetClusterCredentials for that user and database.
    const cluster = target.clusterIdentifier!;
    grants.push(
      Grant.addToPrincipal({
        grantee,
        actions: ['redshift:GetClusterCredentials'],
        resourceArns: [redshiftArn('dbuser', `${cluster}/${target.dbUser}`), redshiftArn('dbname', `${cluster}/${target.database}`)],
      }),
    );
  }
  return grants.reduce((all, grant) => all.combine(grant));
}
