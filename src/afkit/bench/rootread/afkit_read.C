// afkit's ROOT reader: the analysis benchmark run by the tag's own ROOT (afkit.bench.rootread).
//
//   root.exe -b -q -l 'afkit_read.C("CONFIG")'      (reader ttree)
//   root.exe -b -q -l 'afkit_read_rdf.C("CONFIG")'  (reader rdataframe: this macro plus RDataFrame)
//
// CONFIG is a text file of `key value` lines written by afkit.bench.rootread:
//   file F (repeatable, paths or root:// URLs), tree PATTERN (repeatable), branch B (repeatable;
//   none: every top-level branch), reader ttree|rdataframe, work read|histogram, cache_mb N
//   (-1: ROOT's default TTreeCache, 0: no cache), width SECONDS, duration SECONDS (0: no limit),
//   wait 0|1, trace 0|1. No tree pattern: the file's only tree.
//
// Each input is opened with TFile::Open; every TTree whose key path matches a pattern (shell
// wildcards that do not cross '/', as fnmatch(3) with FNM_PATHNAME: `DF_*/O2track`, `events`) is
// read. The TTree reader loops as rootreadspeed does (tree/readspeed/src/ReadSpeed.cxx: every other
// branch disabled, TBranch::GetEntry per chosen branch and entry), through the tree's TTreeCache
// (tree/tree/src/TTreeCache.cxx: ROOT sizes it and learns the branches used in the first entries).
// Lines on stdout that start with "afkit-rootread " are for the driver:
//   afkit-rootread ready VERSION                  inputs opened (then, with `wait 1`, a line "go" on stdin)
//   afkit-rootread start T BYTES CALLS EVENTS CPU the measurement starts
//   afkit-rootread sample T BYTES CALLS EVENTS CPU cumulative, at the first entry of each interval
//   afkit-rootread tree FILE PATH ENTRIES READ VREADS CACHE_BYTES UNCACHED_CALLS  (tab-separated)
//   afkit-rootread hist ENTRIES LOW HIGH BINS
//   afkit-rootread done T BYTES CALLS EVENTS CPU ENDED_BY
//   afkit-rootread error CODE MESSAGE             then exit CODE
//   afkit-rootread read OFFSET LENGTH TIME DURATION   (`trace 1`: each read of a tree's file, after the tree)
// With `trace 1` a TTreePerfStats watches each tree while it is read (tree/treeplayer/src/
// TTreePerfStats.cxx: TFile::ReadBuffer calls its FileReadEvent once per read of the file, which
// stores the read's offset (TFile::GetRelOffset) and length in fGraphIO's y and y-error, as 1e-6 x
// bytes and 1e-9 x bytes, and the time after it (TTimeStamp) and its duration in fGraphTime's y and
// y-error; Finish() rescales fGraphTime, so the points are taken before anything calls it). A read
// of the tree cache is one TFile::ReadBuffers: over root:// one vector read (one record), on a local
// file ROOT's own reads of its coalesced parts (a record each).
// BYTES and CALLS are TFile::GetFileBytesRead / GetFileReadCalls (io/io/src/TFile.cxx: every
// ReadBuffer and every ReadBuffers counts one call; over root:// TNetXNGFile::ReadBuffers is one
// XRootD vector read, net/netxng/src/TNetXNGFile.cxx). VREADS are the tree cache's transactions
// (TFileCacheRead::GetReadCalls: one TFile::ReadBuffers each, a vector read over root://).
#pragma cling optimize(3)

#include <fnmatch.h>
#include <time.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "TBranch.h"
#include "TDirectory.h"
#include "TFile.h"
#include "TFileCacheRead.h"
#include "TH1D.h"
#include "TKey.h"
#include "TLeaf.h"
#include "TLeafC.h"
#include "TLeafElement.h"
#include "TROOT.h"
#include "TObjArray.h"
#include "TSystem.h"
#include "TTree.h"
#include "TTreePerfStats.h"
#include "TGraphErrors.h"

namespace afkit_rootread {

struct Config {
   std::vector<std::string> files, trees, branches;
   std::string reader = "ttree", work = "read";
   double cacheMB = -1, width = 1, duration = 0;
   bool wait = false; // after opening the inputs: print "ready", wait for a line on stdin
   bool trace = false; // record every read of each tree's file (TTreePerfStats)
};

struct State {
   Config cfg;
   double next = 0, deadline = 0;
   double lastCheck = 0;       // when Tick last read the clock
   long countdown = 1, stride = 1; // entries until the next look at the clock, and between looks
   long long events = 0;
   bool stopped = false;
   std::unique_ptr<TH1D> hist;
};

double PreciseNow()
{
   timespec ts;
   clock_gettime(CLOCK_REALTIME, &ts);
   return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

[[noreturn]] void Fail(int code, const std::string &message)
{
   std::printf("afkit-rootread error %d %s\n", code, message.c_str());
   std::fflush(stdout);
   gSystem->Exit(code);
   throw 0; // not reached
}

// CPU seconds of this process (user + system), as TStopwatch::CpuTime counts them
double CpuNow()
{
   timespec ts;
   clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
   return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

void Sample(State &st, double t, const char *what = "sample", const char *tail = "")
{
   std::printf("afkit-rootread %s %.6f %lld %d %lld %.6f%s\n", what, t, TFile::GetFileBytesRead(),
               TFile::GetFileReadCalls(), st.events, CpuNow(), tail);
   std::fflush(stdout);
}

// A look at the clock (Tick, when the countdown of entries ends): an interval boundary passed ->
// one sample; past the duration -> stop (false). The clock is read about once a millisecond, not
// per entry: the entries between two looks double while they come faster than 0.5 ms apart and
// halve when slower than 2 ms. The caller has counted its entries into st.events first.
bool Look(State &st)
{
   const double t = PreciseNow();
   const double gap = t - st.lastCheck;
   st.lastCheck = t;
   if (gap < 0.0005 && st.stride < 65536)
      st.stride *= 2;
   else if (gap > 0.002 && st.stride > 1)
      st.stride /= 2;
   st.countdown = st.stride;
   if (t < st.next)
      return true;
   Sample(st, t);
   st.next = (static_cast<long long>(t / st.cfg.width) + 1) * st.cfg.width;
   if (st.deadline > 0 && t >= st.deadline) {
      st.stopped = true;
      return false;
   }
   return true;
}

// called once per entry (after st.events counts it)
inline bool Tick(State &st)
{
   return --st.countdown > 0 || Look(st);
}

Config ReadConfig(const char *path)
{
   Config cfg;
   std::ifstream in(path);
   if (!in)
      Fail(2, std::string("cannot read the reader's configuration ") + path);
   std::string line;
   while (std::getline(in, line)) {
      const auto sp = line.find(' ');
      const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
      if (key == "file")
         cfg.files.push_back(value);
      else if (key == "tree")
         cfg.trees.push_back(value);
      else if (key == "branch")
         cfg.branches.push_back(value);
      else if (key == "reader")
         cfg.reader = value;
      else if (key == "work")
         cfg.work = value;
      else if (key == "cache_mb")
         cfg.cacheMB = std::stod(value);
      else if (key == "width")
         cfg.width = std::stod(value);
      else if (key == "duration")
         cfg.duration = std::stod(value);
      else if (key == "wait")
         cfg.wait = value == "1";
      else if (key == "trace")
         cfg.trace = value == "1";
      else if (!key.empty())
         Fail(2, "unknown key '" + key + "' in the reader's configuration " + path);
   }
   return cfg;
}

// key paths of every TTree below DIR ("DF_1/O2track"), in the file's key order (highest cycle only)
void FindTrees(TDirectory *dir, const std::string &prefix, std::vector<std::string> &out)
{
   for (auto *obj : *dir->GetListOfKeys()) {
      auto *key = static_cast<TKey *>(obj);
      const std::string path = prefix + key->GetName();
      if (dir->GetKey(key->GetName()) != key) // an older cycle of the same name
         continue;
      TClass *cls = TClass::GetClass(key->GetClassName());
      if (!cls)
         continue;
      if (cls->InheritsFrom(TTree::Class())) {
         out.push_back(path);
      } else if (cls->InheritsFrom(TDirectory::Class())) {
         if (auto *sub = dir->GetDirectory(key->GetName()))
            FindTrees(sub, path + "/", out);
      }
   }
}

bool Matches(const std::vector<std::string> &patterns, const std::string &path)
{
   for (const auto &p : patterns)
      if (fnmatch(p.c_str(), path.c_str(), FNM_PATHNAME) == 0)
         return true;
   return false;
}

// the first leaf of BRANCH that holds numbers (not a string, not an object), or null
TLeaf *NumericLeaf(TBranch *b)
{
   auto *leaves = b->GetListOfLeaves();
   for (int i = 0; leaves && i < leaves->GetEntriesFast(); ++i) {
      auto *leaf = static_cast<TLeaf *>(leaves->At(i));
      if (leaf->InheritsFrom(TLeafC::Class()))
         continue;
      if (auto *el = dynamic_cast<TLeafElement *>(leaf)) {
         auto *be = static_cast<TBranchElement *>(el->GetBranch());
         if (be->GetListOfBranches()->GetEntriesFast() > 0 || be->GetStreamerType() <= 0)
            continue;
      }
      return leaf;
   }
   for (auto *sub : *b->GetListOfBranches())
      if (auto *leaf = NumericLeaf(static_cast<TBranch *>(sub)))
         return leaf;
   return nullptr;
}

void FillFrom(TH1D &h, TLeaf *leaf)
{
   const int n = leaf->GetLen();
   for (int i = 0; i < n; ++i)
      h.Fill(leaf->GetValue(i));
}

// Enable B and every branch below it: a split object's or TClonesArray's members are branches of
// their own (AliESDEvent's "Tracks", "AliESDRun." ...), and SetBranchStatus of the top-level name
// alone leaves them disabled, so TBranch::GetEntry of the top reads almost nothing.
void EnableWithSubBranches(TTree *t, TBranch *b)
{
   t->SetBranchStatus(b->GetFullName().Data(), 1);
   for (auto *sub : *b->GetListOfBranches())
      EnableWithSubBranches(t, static_cast<TBranch *>(sub));
}

std::vector<TBranch *> ChooseBranches(TTree *t, const State &st, const std::string &where)
{
   std::vector<TBranch *> out;
   t->SetBranchStatus("*", 0);
   if (st.cfg.branches.empty()) {
      for (auto *b : *t->GetListOfBranches())
         out.push_back(static_cast<TBranch *>(b));
   } else {
      std::string missing;
      for (const auto &name : st.cfg.branches) {
         if (auto *b = t->GetBranch(name.c_str()))
            out.push_back(b);
         else
            missing += (missing.empty() ? "'" : ", '") + name + "'";
      }
      if (!missing.empty())
         Fail(5, "no branch " + missing + " in tree '" + where + "'");
   }
   for (auto *b : out)
      EnableWithSubBranches(t, b);
   return out;
}

long long ReadTTree(TTree *t, State &st, const std::string &where)
{
   auto branches = ChooseBranches(t, st, where);
   if (st.cfg.cacheMB >= 0)
      t->SetCacheSize(static_cast<Long64_t>(st.cfg.cacheMB * 1024 * 1024));
   TLeaf *leaf = nullptr;
   if (st.hist) {
      for (auto *b : branches)
         if ((leaf = NumericLeaf(b)))
            break;
      if (!leaf)
         Fail(6, "no numeric branch to fill a histogram from in tree '" + where + "'");
   }
   const Long64_t entries = t->GetEntries();
   const auto nb = branches.size();
   TBranch **bs = branches.data();
   // the entry the tree cache fills and learns around (TTreeCache::FillBuffer reads the tree's
   // entry); without a cache the loop is rootreadspeed's exactly (no TTree::LoadTree)
   const bool cached = st.cfg.cacheMB != 0;
   const long long before = st.events;
   Long64_t e = 0;
   while (e < entries) {
      if (cached)
         t->LoadTree(e);
      for (size_t i = 0; i < nb; ++i)
         bs[i]->GetEntry(e);
      if (leaf)
         FillFrom(*st.hist, leaf);
      ++e;
      if (--st.countdown <= 0) { // the per-entry part of Tick, kept to one decrement
         st.events = before + e;
         if (!Look(st))
            break;
      }
   }
   st.events = before + e;
   return e;
}

// every read TTreePerfStats recorded: offset and length in bytes, the time after it and its duration
void PrintReads(TTreePerfStats &perf)
{
   TGraphErrors *io = perf.GetGraphIO(), *tm = perf.GetGraphTime();
   const int n = io->GetN();
   for (int i = 0; i < n; ++i)
      std::printf("afkit-rootread read %lld %lld %.6f %.9f\n", std::llround(io->GetY()[i] * 1e6),
                  std::llround(io->GetEY()[i] * 1e9), tm->GetY()[i], tm->GetEY()[i]);
   std::fflush(stdout);
}

// the RDataFrame reader: afkit_read_rdf.C sets it (RDataFrame's headers cost cling a second or
// more to parse, so the TTree reader's macro does not include them)
long long (*gReadRDataFrame)(TTree *, State &, const std::string &) = nullptr;

} // namespace afkit_rootread

void afkit_read(const char *config)
{
   using namespace afkit_rootread;
   State st;
   st.cfg = ReadConfig(config);
   const bool rdf = st.cfg.reader == "rdataframe";
   if (!rdf && st.cfg.reader != "ttree")
      Fail(2, "reader must be ttree or rdataframe, not '" + st.cfg.reader + "'");
   if (rdf && !gReadRDataFrame)
      Fail(2, "reader rdataframe: run afkit_read_rdf.C");
   if (st.cfg.work != "read" && st.cfg.work != "histogram")
      Fail(2, "work must be read or histogram, not '" + st.cfg.work + "'");
   if (st.cfg.work == "histogram") {
      // no range given: ROOT takes it from its first entries (TH1's automatic binning buffer)
      st.hist = std::make_unique<TH1D>("afkit_hist", "", 100, 0., 0.);
      st.hist->SetDirectory(nullptr);
   }
   // open and check every input before measuring (the uproot engine does the same)
   std::vector<std::pair<TFile *, std::vector<std::pair<std::string, TTree *>>>> inputs;
   for (const auto &name : st.cfg.files) {
      TFile *f = TFile::Open(name.c_str(), "READ");
      if (!f || f->IsZombie())
         Fail(5, "cannot open ROOT file '" + name + "'");
      std::vector<std::string> all, chosen;
      FindTrees(f, "", all);
      if (st.cfg.trees.empty()) { // no pattern: the file's only tree
         if (all.size() != 1)
            Fail(2, "'" + name + "' holds " + std::to_string(all.size()) + " trees; say which with a tree pattern");
         chosen = all;
      }
      for (const auto &p : all)
         if (!st.cfg.trees.empty() && Matches(st.cfg.trees, p))
            chosen.push_back(p);
      if (chosen.empty()) {
         std::string listed;
         for (size_t i = 0; i < all.size() && i < 30; ++i)
            listed += (i ? ", " : "") + all[i];
         std::string wanted;
         for (const auto &p : st.cfg.trees)
            wanted += (wanted.empty() ? "'" : ", '") + p + "'";
         Fail(5, "no tree matching " + wanted + " in '" + name + "' (trees: " + (listed.empty() ? "none" : listed) +
                    ")");
      }
      std::vector<std::pair<std::string, TTree *>> trees;
      for (const auto &path : chosen) { // the trees' headers are read here, not in the measurement
         auto *t = f->Get<TTree>(path.c_str());
         if (!t)
            Fail(6, "cannot read tree '" + path + "' of '" + name + "'");
         std::string missing;
         for (const auto &b : st.cfg.branches)
            if (!t->GetBranch(b.c_str()))
               missing += (missing.empty() ? "'" : ", '") + b + "'";
         if (!missing.empty())
            Fail(5, "no branch " + missing + " in tree '" + path + "' of '" + name + "'");
         trees.emplace_back(path, t);
      }
      inputs.emplace_back(f, trees);
   }
   std::printf("afkit-rootread ready %s\n", gROOT->GetVersion());
   std::fflush(stdout);
   if (st.cfg.wait) {
      std::string go;
      std::getline(std::cin, go);
      if (go != "go")
         Fail(1, "the driver did not release the reader (another client failed)");
   }
   const double start = PreciseNow();
   st.lastCheck = start;
   st.next = (static_cast<long long>(start / st.cfg.width) + 1) * st.cfg.width;
   st.deadline = st.cfg.duration > 0 ? start + st.cfg.duration : 0;
   Sample(st, start, "start");
   for (auto &[f, trees] : inputs) {
      for (const auto &[path, t] : trees) {
         const std::string where = path + "' of '" + f->GetName();
         std::unique_ptr<TTreePerfStats> perf;
         if (st.cfg.trace)
            perf = std::make_unique<TTreePerfStats>("afkit_trace", t); // sets gPerfStats
         const long long read = rdf ? gReadRDataFrame(t, st, where) : ReadTTree(t, st, where);
         if (perf)
            PrintReads(*perf);
         int vreads = 0, uncached = 0;
         long long cached = 0;
         if (auto *cache = f->GetCacheRead(t)) {
            vreads = cache->GetReadCalls();
            cached = cache->GetBytesRead();
            uncached = cache->GetNoCacheReadCalls();
         }
         std::printf("afkit-rootread tree\t%s\t%s\t%lld\t%lld\t%d\t%lld\t%d\n", f->GetName(), path.c_str(),
                     t->GetEntries(), read, vreads, cached, uncached);
         if (st.stopped)
            break;
      }
      if (st.stopped)
         break;
   }
   const double end = PreciseNow();
   if (st.hist) {
      st.hist->BufferEmpty();
      std::printf("afkit-rootread hist %.0f %.17g %.17g %d\n", st.hist->GetEntries(),
                  st.hist->GetXaxis()->GetXmin(), st.hist->GetXaxis()->GetXmax(), st.hist->GetNbinsX());
   }
   Sample(st, end, "done", st.stopped ? " duration" : " end-of-data");
   for (auto &[f, trees] : inputs) { // after the measurement, as the opening came before it
      for (auto &entry : trees)
         delete entry.second;
      f->Close();
      delete f;
   }
}
