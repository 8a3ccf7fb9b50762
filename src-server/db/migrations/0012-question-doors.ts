import type { Migration } from './migration';

/**
 * Questions from tool servers in Slack and mail (docs/approvals.md#questions-from-tool-servers): a question queues
 * the stop's deliveries as a gate does, when it is asked (a message, a mail) and when it is answered, expires or is
 * withdrawn (the message follows it).
 */
export const questionDoors: Migration = {
  name: '0012_question_doors',
  // A trigger that queues deliveries: the release before reads a question's delivery as a stop that no longer waits
  // and sends nothing, so it may run beside this one.
  compatible: true,
  async up(client) {
    await client.query(
      `CREATE OR REPLACE FUNCTION svc_stop_deliveries_question() RETURNS trigger LANGUAGE plpgsql AS $fn$
       BEGIN
         IF TG_OP = 'INSERT' THEN
           PERFORM svc_stop_deliveries_enqueue(NEW.run_id, NEW.wait_seq, true);
         ELSIF OLD.state = 'asked' AND NEW.state <> 'asked' THEN
           PERFORM svc_stop_deliveries_enqueue(NEW.run_id, NEW.wait_seq, false);
         END IF;
         RETURN NULL;
       END
       $fn$`,
    );
    await client.query(
      `CREATE OR REPLACE TRIGGER svc_tool_questions_stop_deliveries AFTER INSERT OR UPDATE OF state
         ON svc_tool_questions FOR EACH ROW EXECUTE FUNCTION svc_stop_deliveries_question()`,
    );
  },
};
