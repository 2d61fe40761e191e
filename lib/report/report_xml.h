/* SPDX-License-Identifier: MIT */
/* The report in Valgrind's XML output format, protocol version 4, so that the
 * tools that read Valgrind's XML (CI plugins, IDEs, valgrind-ci) read gpuleak's:
 *
 *   <valgrindoutput> <protocolversion>4</protocolversion>
 *     <protocoltool>gpuleak</protocoltool> <preamble> <pid> <ppid> <tool> <args>
 *     <status>RUNNING/FINISHED</status>
 *     <error> per loss record shown: <unique> <tid> <kind>Leak_DefinitelyLost ...
 *       <xwhat><text> <leakedbytes> <leakedblocks></xwhat> <auxwhat>the block line
 *       <stack><frame><ip><obj><fn><dir><file><line></frame></stack>
 *       <suppression> with --gen-suppressions=all </error>
 *     <errorcounts> <suppcounts>
 *     then gpuleak's own: <usage> <stats> <leakchecks> <growth>
 *   </valgrindoutput>
 *
 * Kinds: Leak_DefinitelyLost, Leak_IndirectlyLost, Leak_PossiblyLost,
 * Leak_StillReachable, and gpuleak's Leak_Cached and Leak_LiveAtDeath (only in
 * a saved log of a process that died before its exit check). */
#ifndef GPULEAK_REPORT_XML_H
#define GPULEAK_REPORT_XML_H

#include "report/report_text.h"

/* Write the whole document to o (its line prefix is not used). */
void gl_report_xml(struct gl_out *o, const struct gl_report_input *in);

/* The XML kind of a leak kind: "Leak_DefinitelyLost"... */
const char *gl_report_xml_leak_kind(enum gl_leak_kind k);

#endif
