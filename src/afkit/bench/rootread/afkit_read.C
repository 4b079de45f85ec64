// afkit's ROOT reader: the analysis benchmark run by the tag's own ROOT (afkit.bench.rootread).
//
//   root.exe -b -q -l 'afkit_read.C("CONFIG")'
//
// CONFIG is a text file of `key value` lines written by afkit.bench.rootread:
//   file F (repeatable, paths or root:// URLs), tree PATTERN (repeatable), branch B (repeatable;
//   none: every top-level branch), reader ttree|rdataframe, work read|histogram, cache_mb N
//   (-1: ROOT's default TTreeCache, 0: no cache), width SECONDS, duration SECONDS (0: no limit),
//   wait 0|1. No tree pattern: the file's only tree.
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
// BYTES and CALLS are TFile::GetFileBytesRead / GetFileReadCalls (io/io/src/TFile.cxx: every
// ReadBuffer and every ReadBuffers counts one call; over root:// TNetXNGFile::ReadBuffers is one
// XRootD vector read, net/netxng/src/TNetXNGFile.cxx). VREADS are the tree cache's transactions
// (TFileCacheRead::GetReadCalls: one TFile::ReadBuffers each, a vector read over root://).
#pragma cling optimize(3)

#include <fnmatch.h>
#include <time.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ROOT/RDataFrame.hxx"
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

namespace afkit_rootread {

struct Config {
   std::vector<std::string> files, trees, branches;
   std::string reader = "ttree", work = "read";
   double cacheMB = -1, width = 1, duration = 0;
   bool wait = false; // after opening the inputs: print "ready", wait for a line on stdin
};

struct State {
   Config cfg;
   double next = 0, deadline = 0;
   long long events = 0;
   bool stopped = false;
   std::unique_ptr<TH1D> hist;
};

// wall clock, cheap enough for every entry (the vDSO's coarse clock, a few ms of resolution)
inline double Now()
{
   timespec ts;
   clock_gettime(CLOCK_REALTIME_COARSE, &ts);
   return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

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

// called once per entry: an interval boundary passed -> one sample; past the duration -> stop
inline bool Tick(State &st)
{
   const double t = Now();
   if (t < st.next)
      return true;
   Sample(st, PreciseNow());
   st.next = (static_cast<long long>(t / st.cfg.width) + 1) * st.cfg.width;
   if (st.deadline > 0 && t >= st.deadline) {
      st.stopped = true;
      return false;
   }
   return true;
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
      t->SetBranchStatus(b->GetName(), 1);
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
   Long64_t e = 0;
   for (; e < entries; ++e) {
      t->LoadTree(e); // the entry the tree cache fills and learns around (TTreeCache::FillBuffer)
      for (size_t i = 0; i < nb; ++i)
         bs[i]->GetEntry(e);
      if (leaf)
         FillFrom(*st.hist, leaf);
      ++st.events;
      if (!Tick(st)) {
         ++e;
         break;
      }
   }
   return e;
}

long long ReadRDataFrame(TTree *t, State &st, const std::string &where)
{
   auto branches = ChooseBranches(t, st, where);
   t->SetBranchStatus("*", 1); // RDataFrame manages the tree's branches itself
   if (st.cfg.cacheMB >= 0)
      t->SetCacheSize(static_cast<Long64_t>(st.cfg.cacheMB * 1024 * 1024));
   ROOT::RDataFrame df(*t);
   std::vector<std::string> cols;
   std::string expr;
   for (size_t i = 0; i < branches.size(); ++i) {
      const std::string alias = "afkit_c" + std::to_string(i);
      cols.push_back(alias);
      expr += "(void)" + alias + "; ";
   }
   ROOT::RDF::RNode node = df;
   for (size_t i = 0; i < branches.size(); ++i)
      node = node.Alias(cols[i], branches[i]->GetName());
   // every chosen column is an argument of the jitted expression: RDataFrame reads each per entry
   long long read = 0;
   auto counted = node.Filter(expr + "return true;").Filter(
      [&st, &read](ULong64_t) {
         ++read;
         ++st.events;
         return Tick(st) || true;
      },
      {"rdfentry_"});
   if (st.hist) {
      TLeaf *leaf = nullptr;
      for (auto *b : branches)
         if ((leaf = NumericLeaf(b)))
            break;
      if (!leaf)
         Fail(6, "no numeric branch to fill a histogram from in tree '" + where + "'");
      auto h = counted.Histo1D({"afkit_rdf", "", 100, 0., 0.}, leaf->GetBranch()->GetName());
      st.hist->Add(h.GetPtr());
   } else {
      counted.Count().GetValue();
   }
   return read;
}

} // namespace afkit_rootread

void afkit_read(const char *config)
{
   using namespace afkit_rootread;
   State st;
   st.cfg = ReadConfig(config);
   const bool rdf = st.cfg.reader == "rdataframe";
   if (!rdf && st.cfg.reader != "ttree")
      Fail(2, "reader must be ttree or rdataframe, not '" + st.cfg.reader + "'");
   if (st.cfg.work != "read" && st.cfg.work != "histogram")
      Fail(2, "work must be read or histogram, not '" + st.cfg.work + "'");
   if (st.cfg.work == "histogram") {
      // no range given: ROOT takes it from its first entries (TH1's automatic binning buffer)
      st.hist = std::make_unique<TH1D>("afkit_hist", "", 100, 0., 0.);
      st.hist->SetDirectory(nullptr);
   }
   // open and check every input before measuring (the uproot engine does the same)
   std::vector<std::pair<TFile *, std::vector<std::string>>> inputs;
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
      inputs.emplace_back(f, chosen);
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
   st.next = (static_cast<long long>(start / st.cfg.width) + 1) * st.cfg.width;
   st.deadline = st.cfg.duration > 0 ? start + st.cfg.duration : 0;
   Sample(st, start, "start");
   for (auto &[f, trees] : inputs) {
      for (const auto &path : trees) {
         auto *t = f->Get<TTree>(path.c_str());
         if (!t)
            Fail(6, "cannot read tree '" + path + "' of '" + f->GetName() + "'");
         const std::string where = path + "' of '" + f->GetName();
         const long long read = rdf ? ReadRDataFrame(t, st, where) : ReadTTree(t, st, where);
         int vreads = 0, uncached = 0;
         long long cached = 0;
         if (auto *cache = f->GetCacheRead(t)) {
            vreads = cache->GetReadCalls();
            cached = cache->GetBytesRead();
            uncached = cache->GetNoCacheReadCalls();
         }
         std::printf("afkit-rootread tree\t%s\t%s\t%lld\t%lld\t%d\t%lld\t%d\n", f->GetName(), path.c_str(),
                     t->GetEntries(), read, vreads, cached, uncached);
         delete t;
         if (st.stopped)
            break;
      }
      f->Close();
      delete f;
      if (st.stopped)
         break;
   }
   if (st.hist) {
      st.hist->BufferEmpty();
      std::printf("afkit-rootread hist %.0f %.17g %.17g %d\n", st.hist->GetEntries(),
                  st.hist->GetXaxis()->GetXmin(), st.hist->GetXaxis()->GetXmax(), st.hist->GetNbinsX());
   }
   Sample(st, PreciseNow(), "done", st.stopped ? " duration" : " end-of-data");
}
