// A client nobody on the project wrote: jsforce against the served org. Prints one JSON report of what it
// got; tests/org/test_serve_clients.py checks it against the org file. Usage:
//   node jsforce_client.js JSFORCE_DIR INSTANCE_URL USERNAME PASSWORD
'use strict';

const [jsforceDir, instanceUrl, username, password] = process.argv.slice(2);
const jsforce = require(jsforceDir);

async function main() {
  const report = {};
  const conn = new jsforce.Connection({
    loginUrl: instanceUrl,
    version: '60.0',
    oauth2: { loginUrl: instanceUrl, clientId: 'crmarena', clientSecret: 'unused' },
  });
  const info = await conn.login(username, password); // the OAuth username-password flow
  report.login = { accessToken: conn.accessToken, instanceUrl: conn.instanceUrl, userId: info.id, organizationId: info.organizationId };
  report.identity = await conn.identity();

  const all = await conn.query('SELECT Id FROM CaseHistory__c', { autoFetch: true, maxFetch: 100000 });
  report.autoFetch = { totalSize: all.totalSize, fetched: all.records.length };
  const first = await conn.query('SELECT Id FROM CaseHistory__c');
  const more = await conn.queryMore(first.nextRecordsUrl);
  report.queryMore = { first: first.records.length, done: first.done, more: more.records.length };
  report.limitInfo = conn.limitInfo;

  report.search = await conn.search('FIND {running} IN ALL FIELDS RETURNING Product2(Id, Name)');
  const describe = await conn.sobject('Case').describe();
  report.describe = { name: describe.name, keyPrefix: describe.keyPrefix, fields: describe.fields.length };

  // CRUD, one record and several (several go through composite/sobjects, updates with a lowercase "id").
  const made = await conn.sobject('Issue__c').create({ Name: 'Made by jsforce' });
  const many = await conn.sobject('Issue__c').create([{ Name: 'jsforce many 1' }, { Name: 'jsforce many 2' }]);
  const manyIds = many.map((r) => r.id);
  const updated = await conn.sobject('Issue__c').update(manyIds.map((id, i) => ({ Id: id, Name: `jsforce renamed ${i}` })));
  const read = await conn.sobject('Issue__c').retrieve(made.id);
  await conn.sobject('Issue__c').update({ Id: made.id, Description__c: 'changed once' });
  const destroyed = await conn.sobject('Issue__c').destroy(manyIds);
  const after = await conn.query("SELECT Id, Name, IsDeleted FROM Issue__c WHERE Name LIKE '%jsforce%' AND (NOT Name LIKE 'jsforce bulk%')", { scanAll: true });
  report.crud = { made, many, updated, read: { Id: read.Id, Name: read.Name }, destroyed, afterScanAll: after.records };

  // A create of an account and its contact: the refused contact delete first, then the account deletes with it.
  const account = await conn.sobject('Account').create({ LastName: 'Jsforce' });
  await conn.sobject('Contact').create({ LastName: 'Jsforce', AccountId: account.id });
  await conn.sobject('Account').destroy(account.id);
  report.cascade = (await conn.query(`SELECT COUNT() FROM Contact WHERE AccountId = '${account.id}'`)).totalSize;

  const upserted = await conn.sobject('Product2').upsert({ External_ID__c: 'JSF-1', Name: 'Upserted by jsforce' }, 'External_ID__c');
  const upsertedAgain = await conn.sobject('Product2').upsert({ External_ID__c: 'JSF-1', Name: 'Upserted twice' }, 'External_ID__c');
  report.upsert = { first: upserted, second: upsertedAgain };

  const start = new Date('2025-07-29T00:00:00Z');
  const end = new Date('2025-07-30T00:00:00Z');
  report.deleted = await conn.sobject('Issue__c').deleted(start, end);
  report.updated = await conn.sobject('Issue__c').updated(start, end);

  const csv = 'Name,Description__c\njsforce bulk 1,one\njsforce bulk 2,two\n';
  const loaded = await conn.bulk2.loadAndWaitForResults({ object: 'Issue__c', operation: 'insert', input: csv, pollInterval: 100, pollTimeout: 30000 });
  report.bulkLoad = { successful: loaded.successfulResults.length, failed: loaded.failedResults.length };
  const rows = await (await conn.bulk2.query("SELECT Id, Name FROM Issue__c WHERE Name LIKE 'jsforce bulk%'", { pollInterval: 100, pollTimeout: 30000 })).toArray();
  report.bulkQuery = rows.map((r) => r.Name).sort();

  const revoked = { instanceUrl: conn.instanceUrl, accessToken: conn.accessToken, version: '60.0' };
  await conn.logout(); // revokes the token (/services/oauth2/revoke)
  try {
    await new jsforce.Connection(revoked).query('SELECT Id FROM Case LIMIT 1');
    report.afterLogout = 'answered';
  } catch (err) {
    report.afterLogout = err.errorCode || err.name;
  }
  return report;
}

main().then(
  (report) => process.stdout.write(JSON.stringify(report)),
  (err) => {
    process.stdout.write(JSON.stringify({ error: String(err && err.stack ? err.stack : err), errorCode: err && err.errorCode }));
    process.exitCode = 1;
  },
);
