# Tests of tools/sass_hist.py (the static instruction counts of docs/perf_notes.md v49) on a
# hand-written cuobjdump listing: functions split at their headers, opcodes counted without
# modifiers or predicates, and the epilogue loop found as the largest backward branch whose body
# holds a plain global store (a loop with only a STRONG store, or a forward branch, is not it).
#   python3 -m unittest discover -s tools/device/tests
import collections
import io
import os
import sys
import unittest

kRepo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, kRepo)

from tools import sass_hist  # noqa: E402

kListing = """
	code for sm_90a
		Function : k1_epilogue
	.headerflags	@"EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                      /* 0x00000a00ff017b82 */
        /*0010*/                   S2R R0, SR_TID.X ;                          /* 0x0000000000007919 */
        /*0020*/                   DADD R4, R4, -UR6 ;                         /* 0x0000000000007919 */
        /*0030*/                   DMUL R6, R8, R4 ;                           /* 0x0000000000007919 */
        /*0040*/              @P0 STG.E.64 desc[UR4][R2.64], R6 ;              /* 0x0000000000007919 */
        /*0050*/              @!P1 BRA 0x20 ;                                  /* 0x0000000000007919 */
        /*0060*/                   STG.E.STRONG.GPU desc[UR4][R2.64], R3 ;    /* 0x0000000000007919 */
        /*0070*/                   NOP ;                                       /* 0x0000000000007919 */
        /*0080*/                   NOP ;                                       /* 0x0000000000007919 */
        /*0090*/                   NOP ;                                       /* 0x0000000000007919 */
        /*00a0*/                   @P2 BRA 0x60 ;                              /* 0x0000000000007919 */
        /*00b0*/                   BRA 0xc0 ;                                  /* 0x0000000000007919 */
        /*00c0*/                   EXIT ;                                      /* 0x0000000000007919 */
		..........
		Function : k2_plain
        /*0000*/                   FADD R0, R0, 1 ;                            /* 0x0000000000007919 */
        /*0010*/                   FADD.FTZ R0, R0, 1 ;                        /* 0x0000000000007919 */
        /*0020*/                   EXIT ;                                      /* 0x0000000000007919 */
"""


class SassHistTest(unittest.TestCase):
    def test_functions_and_opcodes(self):
        funcs = sass_hist.functions(io.StringIO(kListing))
        self.assertEqual(list(funcs), ["k1_epilogue", "k2_plain"])
        self.assertEqual(len(funcs["k1_epilogue"]), 13)
        counts = collections.Counter(sass_hist.opcode(t) for _, t in funcs["k2_plain"])
        self.assertEqual(counts, collections.Counter({"FADD": 2, "EXIT": 1}))
        self.assertEqual(sass_hist.opcode("@!P1 BRA 0x20"), "BRA")

    def test_epilogue_loop_is_the_backward_branch_around_a_plain_store(self):
        funcs = sass_hist.functions(io.StringIO(kListing))
        body = sass_hist.epilogue_loop(funcs["k1_epilogue"])
        self.assertIsNotNone(body)
        # 0x20..0x50: DADD, DMUL, STG, BRA - not the larger loop around the STRONG store (0x60..0xa0).
        self.assertEqual([a for a, _ in body], [0x20, 0x30, 0x40, 0x50])
        self.assertIsNone(sass_hist.epilogue_loop(funcs["k2_plain"]))


if __name__ == "__main__":
    unittest.main()
