"""What the client sends again, against a real socket that reads each request and drops the
connection without answering (the answer lost on the way back)."""
import http.server
import threading
import unittest

import insightd_client as insight


class DroppingHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.server.requests += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.close_connection = True  # no answer at all

    do_GET = do_POST

    def log_message(self, format, *args):
        pass


REQUEST = {"operationCategory": "payment", "insights": [{"type": "isLikelyBeingCoached", "schemaVersion": 1}]}


class RetryTests(unittest.TestCase):
    def setUp(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DroppingHandler)
        self.server.requests = 0
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def sent(self, call, **options):
        client = insight.Client(self.url, "key", max_retries=2, backoff=0, timeout=2, **options)
        with self.assertRaises(insight.TransportError) as raised:
            call(client)
        self.assertTrue(raised.exception.may_have_reached_server)
        return self.server.requests

    def test_an_evaluation_that_may_have_arrived_is_not_sent_again(self):
        self.assertEqual(self.sent(lambda c: c.evaluate(REQUEST)), 1)

    def test_only_an_evaluation_with_your_request_id_is_sent_again(self):
        mine = dict(REQUEST, requestId="txn-1")
        self.assertEqual(self.sent(lambda c: c.evaluate(mine)), 3)
        self.server.requests = 0
        self.assertEqual(self.sent(lambda c: c.evaluate(mine), idempotent_evaluations=False), 1)

    def test_reads_and_idempotent_writes_are_sent_again(self):
        self.assertEqual(self.sent(lambda c: c.catalog()), 3)
        self.server.requests = 0
        self.assertEqual(self.sent(lambda c: c.report_consumption("e", insight.ConsumptionStatus.NOT_USED_NOT_NEEDED)), 3)


if __name__ == "__main__":
    unittest.main()
